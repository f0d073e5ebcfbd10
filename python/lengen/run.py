"""A trained run from Python: its config, vocabulary, examples, forward passes with captured
internals and interventions, greedy decoding and the grid evaluation (docs/python.md)."""
import os
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import torch

from . import _lengen
from .frames import read_grid

CAPTURES = ("attention", "residual")


@dataclass
class Output:
    """What run.forward returns.

    logits          [batch, T, vocabulary]; for the decoder, row i's real positions are its first
                    lengths[i] (rows are padded at the end), so with queries of one length
                    logits[:, -1] are the next-token logits `lengen logits` prints
    last_logits     [batch, vocabulary]: each row's logits at its last real position
    lengths         [batch] real tokens of each row
    attention       one [batch, heads, T, S] tensor per attention application (attention_names)
    attention_names "blocks.0", "blocks.0.cross", "encoder.0", with "@<loop>" when looped
    residual        one [batch, T, C] tensor per block application: the residual stream after it
    residual_names  the blocks' names, in order
    mask            architectures other than the decoder: where the logits are scored
    """
    logits: torch.Tensor
    last_logits: torch.Tensor
    lengths: torch.Tensor
    attention: List[torch.Tensor] = field(default_factory=list)
    attention_names: List[str] = field(default_factory=list)
    residual: List[torch.Tensor] = field(default_factory=list)
    residual_names: List[str] = field(default_factory=list)
    mask: Optional[torch.Tensor] = None


_HEAD = re.compile(r"^(?P<site>.+)\.head\.(?P<head>\d+)$")
_LAYER = re.compile(r"^layer\.(?P<rest>\d+.*)$")


class _Probe:
    """The function the core calls at every site (lengen/model/attention.h, ModelProbe)."""

    def __init__(self, patch: Dict[str, Callable], residual: bool, heads: int):
        self.residual = [] if residual else None
        self.names = []
        self.whole = {}   # site -> fn(value)
        self.heads = {}   # attention site -> [(head, fn)]
        self.seen = set()
        for key, fn in (patch or {}).items():
            if not callable(fn):
                raise _lengen.Error(f"patch '{key}': expected a function of the tensor there, got {type(fn).__name__}")
            name = key
            m = _LAYER.match(name)
            if m:  # "layer.L..." names the main stack's block L
                name = "blocks." + m.group("rest")
            m = _HEAD.match(name)
            if m:
                head = int(m.group("head"))
                if head >= heads:
                    raise _lengen.Error(f"patch '{key}': the model has {heads} heads (0..{heads - 1})")
                self.heads.setdefault(m.group("site"), []).append((head, fn, key))
            else:
                self.whole[name] = (fn, key)

    def __call__(self, site, value):
        if site.endswith(".heads"):
            base = site[: -len(".heads")]
            out = value
            for head, fn, key in self.heads.get(base, []):
                self.seen.add(key)
                if out is value:
                    out = value.clone()
                out[:, head] = _checked(fn(value[:, head].clone()), value[:, head], key)
            if site in self.whole:
                fn, key = self.whole[site]
                self.seen.add(key)
                out = _checked(fn(out), out, key)
            return out
        if site in self.whole:  # patched first: the stream captured is the one that goes on
            fn, key = self.whole[site]
            self.seen.add(key)
            value = _checked(fn(value), value, key)
        if self.residual is not None:
            self.names.append(site)
            self.residual.append(value.detach().clone())
        return value

    def unused(self):
        keys = [k for _, k in self.whole.values()] + [k for hs in self.heads.values() for _, _, k in hs]
        return [k for k in keys if k not in self.seen]


def _checked(got, like, key):
    if got is None:
        return like
    if not isinstance(got, torch.Tensor) or got.shape != like.shape:
        shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
        raise _lengen.Error(f"patch '{key}': returned {shape}, expected a tensor of shape {tuple(like.shape)}")
    return got


class Run:
    """A trained run: open it with lengen.load_run."""

    def __init__(self, core):
        self._core = core

    # -- what the run is --------------------------------------------------------------------
    @property
    def dir(self) -> str:
        return self._core.dir

    @property
    def config(self) -> dict:
        """The run's resolved config.yaml as a dict (every stage's, for a staged run)."""
        return self._core.config

    @property
    def stage_config(self) -> dict:
        """The resolved experiment of the stage whose model this is."""
        return self._core.stage_config

    @property
    def vocabulary(self) -> List[str]:
        return list(self._core.vocabulary)

    @property
    def stages(self) -> List[dict]:
        """The run's stages (name, kind, init_from); [] for a run without `stages:`."""
        return list(self._core.stages)

    @property
    def stage(self) -> Optional[str]:
        return self._core.stage or None

    @property
    def checkpoint(self) -> str:
        return self._core.checkpoint

    @property
    def architecture(self) -> str:
        return self._core.architecture

    @property
    def attention_names(self) -> List[str]:
        return list(self._core.attention_names)

    def __repr__(self):
        stage = f", stage={self.stage!r}" if self.stage else ""
        return f"lengen.Run({self.dir!r}{stage}, {self.architecture}, device={self._core.device})"

    # -- examples and forward passes ------------------------------------------------------------
    def example(self, query: str) -> dict:
        """The query as the task renders it: text, tokens, token_ids, every level of position_ids,
        loss_mask, prompt_length and meta (`lengen example --json --query`)."""
        return self._core.example(query)

    def samples(self, cell: dict, n: int) -> List[dict]:
        """`n` evaluation samples of a grid cell ({"digits": 12}) as example() dicts, drawn as
        `lengen attention RUN --cell ... -n N` draws the samples it averages."""
        return list(self._core.samples({k: int(v) for k, v in cell.items()}, int(n)))

    def _prompt(self, item):
        if isinstance(item, str):
            return self._core.prompt(item)
        if isinstance(item, dict):
            return list(item["token_ids"]), [list(level) for level in item["position_ids"]]
        if isinstance(item, torch.Tensor):
            item = item.tolist()
        tokens = [int(t) for t in item]
        return tokens, self._core.causal_ids(tokens)

    def forward(self, queries, capture=CAPTURES, patch: Optional[Dict[str, Callable]] = None) -> Output:
        """One forward pass over `queries` and what happened inside it.

        queries: a query text or a list of them, fed as `lengen logits RUN QUERY` feeds them (the
        prompt, with its causal position IDs); or token id lists (IDs from the task's causal
        rule), or example() dicts (their own tokens and IDs). Architectures other than the
        decoder take query texts, rendered in their layout.
        capture: "attention" and/or "residual".
        patch: site -> function of the tensor there, returning its replacement:
            "blocks.L.head.H" (or "layer.L.head.H")  head H's output of block L's attention,
                                                     [batch, T, d_head], before the heads merge
            "blocks.L.heads"                         every head's, [batch, heads, T, d_head]
            "blocks.L"                               the residual stream after block L,
                                                     [batch, T, d_model]
            (".cross" after L for cross-attention, "encoder.L" for an encoder-decoder's encoder,
            "@K" at the end for loop K of a looped model). torch.zeros_like ablates.
        """
        if isinstance(queries, (str, dict)) or (isinstance(queries, torch.Tensor) and queries.dim() == 1):
            queries = [queries]
        unknown = [c for c in capture if c not in CAPTURES]
        if unknown:
            raise _lengen.Error(f"capture: unknown {unknown}; expected some of {list(CAPTURES)}")
        queries = list(queries)
        if not queries:
            raise _lengen.Error("forward: no queries")
        probe = _Probe(patch, "residual" in capture, self._core.heads)
        want_attention = "attention" in capture
        call_probe = probe if (patch or "residual" in capture) else None
        mask = None
        if self._core.autoregressive:
            if all(isinstance(q, str) for q in queries):
                tokens, ids, lengths = self._core.query_batch(queries)
            else:
                prompts = [self._prompt(q) for q in queries]
                tokens, ids, lengths = self._core.prompt_batch([t for t, _ in prompts], [p for _, p in prompts])
            logits, maps = self._core.forward(tokens, ids, want_attention, call_probe)
            last = logits[torch.arange(len(queries)), lengths.to(logits.device) - 1]
        else:
            if not all(isinstance(q, str) for q in queries):
                raise _lengen.Error(f"forward: the '{self.architecture}' architecture takes query texts")
            logits, mask, maps = self._core.forward_queries(queries, want_attention, call_probe)
            lengths = torch.full((len(queries),), logits.shape[1], dtype=torch.int64)
            first = mask.float().argmax(dim=1)  # each row's first scored position
            last = logits[torch.arange(len(queries)), first]
        unused = probe.unused()
        if unused:
            sites = ", ".join(self.attention_names)
            raise _lengen.Error(f"patch: {', '.join(unused)} matched nothing in this model (its attention: {sites})")
        return Output(logits=logits, last_logits=last, lengths=lengths,
                      attention=list(maps) if want_attention else [],
                      attention_names=self.attention_names if want_attention else [],
                      residual=probe.residual or [], residual_names=probe.names, mask=mask)

    # -- decoding and evaluation --------------------------------------------------------------
    def decode(self, query: str) -> str:
        """Greedy KV-cached decoding: the whole sequence as `lengen decode` prints it."""
        return self._core.decode(query)["text"]

    def decode_details(self, query: str) -> dict:
        """decode() with the response's token ids, the reference and the verdict."""
        return self._core.decode(query)

    def evaluate(self, grid: Optional[dict] = None, samples: Optional[int] = None, decode: bool = False,
                 patch: Optional[Dict[str, Callable]] = None):
        """The grid evaluation of `lengen eval` (the same samples, metric and verdicts), over
        `grid` ({axis: [values]}, default the run's) with `samples` a cell (default the run's),
        as a DataFrame (a cell per row: its axes, samples, correct, accuracy, ci_low, ci_high).
        decode=True decodes greedily instead of the teacher-forced check (`--decode`).
        patch: as in forward(), applied to every pass of the evaluation (an ablated head's
        accuracy per length); the teacher-forced check's last block sees only the scored rows."""
        from .frames import _pandas
        pd = _pandas()
        cleaned = {}
        for axis, values in (grid or {}).items():
            if isinstance(values, int):
                values = [values]
            cleaned[axis] = [int(v) for v in values]
        probe = _Probe(patch, False, self._core.heads) if patch else None
        rows = self._core.evaluate(cleaned, int(samples or 0), bool(decode), probe)
        if probe is not None and probe.unused():
            raise _lengen.Error(f"patch: {', '.join(probe.unused())} matched nothing in this model "
                                f"(its attention: {', '.join(self.attention_names)})")
        return pd.DataFrame(rows)

    def grid(self):
        """eval/grid.csv of the run (its last evaluation) as a DataFrame with typed columns."""
        return read_grid(self.dir)


def load_run(path, stage: Optional[str] = None, device: str = "cpu", overrides: Optional[dict] = None) -> Run:
    """Opens the run at `path` (a run directory, or an experiment file whose run directory is
    output_dir/name/seed) with its final weights, or a stage's, on `device` ("cpu", "cuda",
    "auto": the experiment's). overrides: {"key.path": value} applied as --set."""
    core = _lengen.Run(os.fspath(path), stage or "", "" if device == "auto" else device, _sets(overrides))
    return Run(core)


def run(experiment, overrides: Optional[dict] = None, out=None, resume: bool = False, fresh: bool = False,
        no_eval: bool = False, wait: bool = False) -> Run:
    """Runs an experiment file as `lengen run` does (same code, same files), with `overrides` as
    --set and `out` as output_dir; returns the trained run. Ctrl-C stops after a checkpoint,
    resumably (lengen.Interrupted), as in the CLI."""
    sets = _sets(overrides)
    if out is not None:
        sets.append(f"output_dir={os.fspath(out)}")
    run_dir = _lengen.run(os.fspath(experiment), sets, resume, fresh, no_eval, wait)
    if no_eval:
        return run_dir
    return load_run(run_dir)


def sweep(file, overrides: Optional[dict] = None, only: Optional[dict] = None, jobs: int = 0, wait: bool = False):
    """Runs a sweep file here as `lengen sweep FILE` does (the local executor: the same plan,
    folder, lock, points and aggregate), then returns read_sweep() of its folder. overrides: as
    --set on every point; only: {"seed": [0, 1]} as --only; jobs: points at a time (-j; 0: the
    file's executor.workers). A failed point raises lengen.Error after the others finished."""
    from . import _paths
    from .frames import read_sweep
    only_args = []
    for key, values in (only or {}).items():
        for v in (values if isinstance(values, (list, tuple)) else [values]):
            only_args.append(f"{key}={_yaml(v)}")
    folder, failures = _lengen.sweep(os.fspath(file), _sets(overrides), only_args, int(jobs), _paths.lengen_cli,
                                     bool(wait))
    if failures:
        raise _lengen.Error(f"{failures} point(s) of {file} failed; `lengen sweep {file} --status` lists them, "
                            "running the sweep again retries them")
    return read_sweep(folder)


def _sets(overrides):
    """{"train.steps": 100, "position": [...]} -> ["train.steps=100", "position=[...]"]."""
    out = []
    for key, value in (overrides or {}).items():
        out.append(f"{key}={_yaml(value)}")
    return out


def _yaml(value):
    """A Python value as flow-style YAML for --set."""
    import json
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "~"
    if isinstance(value, str):
        return value
    return json.dumps(value)
