"""lengen from Python: open a trained run, read its model's internals as torch tensors,
intervene on them, and get results as pandas DataFrames (docs/python.md).

    import lengen
    run = lengen.load_run("runs/quickstart/0")
    out = run.forward(["57+48"], capture=("attention", "residual"))
    out.logits[:, -1]          # the next-token logits `lengen logits` prints
    out.attention[0]           # [batch, heads, T, T] of the first attention
    run.decode("57+48")        # greedy, KV-cached, as `lengen decode`
    run.grid()                 # eval/grid.csv as a DataFrame

The C++ core (lengen._lengen) is the same code as the CLI's; errors raise lengen.Error with the
CLI's message (file, line, key), progress goes to Python's logging ("lengen.<part>").
"""
import os
import sys

from . import _paths

_here = os.path.dirname(os.path.abspath(__file__))
for _name in ("plugin_dir", "lengen_cli"):  # installed: relative to this folder
    setattr(_paths, _name, os.path.normpath(os.path.join(_here, getattr(_paths, _name))))


def _import_torch():
    """torch, from this Python's path or else from the folder the package was built against."""
    try:
        import torch  # noqa: F401
    except ImportError:
        if _paths.torch_site and os.path.isdir(_paths.torch_site) and _paths.torch_site not in sys.path:
            sys.path.append(_paths.torch_site)
        import torch  # noqa: F401
    return sys.modules["torch"]


torch = _import_torch()

from . import _lengen  # noqa: E402  (LibTorch's symbols come with torch)
from ._lengen import Error, Interrupted  # noqa: E402,F401
from .run import Output, Run, load_run, run, sweep  # noqa: E402,F401
from .frames import read_grid, read_sweep  # noqa: E402,F401

__version__ = _lengen.__version__
plugin_api = _lengen.plugin_api

_lengen.set_package_plugin_dir(_paths.plugin_dir)
_lengen.log_to_python()


def add_plugin_dir(path):
    """Search `path` for plugins first (as the CLI's --plugin-path)."""
    _lengen.add_plugin_dir(os.fspath(path))


def registered(kind):
    """The registered components of a kind ("position", "task", "architecture"), plugins on the
    search path loaded: [{name, summary, options: [{key, type, required}]}]."""
    return list(_lengen.registered(kind))


def plugin_search_path():
    """The folders plugins are loaded from, in order (LENGEN_PLUGIN_PATH included)."""
    return list(_lengen.plugin_search_path())


__all__ = ["Error", "Interrupted", "Output", "Run", "add_plugin_dir", "load_run", "plugin_search_path",
           "read_grid", "read_sweep", "registered", "run", "sweep"]
