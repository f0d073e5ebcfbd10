"""docs/python.md's walk-through, run as written (CTest `python.lengen`): its Python blocks in
order, in one namespace, on a quickstart trained here for 20 steps (its RUN line pointed at it)
and the repository's docs/data; each picture it saves must be there."""
import os
import re

import lengen

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def blocks(path):
    with open(path) as f:
        text = f.read()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_the_walkthrough_runs_as_written(tmp_path, monkeypatch):
    run = lengen.run(os.path.join(ROOT, "experiments", "quickstart.yaml"),
                     overrides={"train.steps": 20, "train.schedule.warmup_steps": 5, "train.checkpoint_every": 20,
                                "train.log_every": 10, "eval.samples": 4,
                                "threads": 1}, out=tmp_path / "runs")
    code = blocks(os.path.join(ROOT, "docs", "python.md"))
    assert len(code) >= 4
    script = "\n".join(code)
    assert 'RUN = "runs/quickstart/0"' in script
    script = script.replace('RUN = "runs/quickstart/0"', f"RUN = {run.dir!r}")
    script = script.replace('"docs/data/', '"' + os.path.join(os.path.abspath(ROOT), "docs", "data") + "/")
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(script, "docs/python.md", "exec"), namespace)
    for picture in ("attention-head.png", "ablation.png", "sweep.png"):
        assert os.path.getsize(tmp_path / picture) > 1000, picture
    # what the blocks computed
    assert list(namespace["table"]["digits"]) == list(range(1, 31))
    assert set(namespace["frame"]["config"]) == {"recipe", "control"}
