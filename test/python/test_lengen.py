"""The Python package against the CLI, on tiny runs trained here (CTest `python.lengen`;
docs/python.md). LENGEN_CLI names the lengen executable of the same build."""
import json
import math
import os
import struct
import subprocess
import sys

import pytest
import torch

import lengen

CLI = os.environ.get("LENGEN_CLI", "lengen")

TINY = """name: {name}
seed: 1
task: {{name: addition, train_digits: [1, 3], eval_digits: [1, 4]}}
model: {{arch: {arch}, layers: 2, heads: 2, d_model: 16, d_ff: 32}}
position: [{position}]
train: {{steps: {steps}, batch_size: 8, log_every: 10, checkpoint_every: 10}}
eval: {{samples: 12}}
"""


def cli(*args):
    done = subprocess.run([CLI, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def write_safetensors(path, tensors):
    """A minimal safetensors writer (F64 and I64), for the abc scheme's calibration file."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.contiguous()
        data = t.numpy().tobytes()
        dtype = {torch.float64: "F64", torch.int64: "I64"}[t.dtype]
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def synthetic_calibration(path, heads):
    """Lines of an attention bias calibration for 4-digit self- and cross-attention maps."""
    g = torch.Generator().manual_seed(42)
    tensors = {}
    for kind in ("self", "cross"):
        m, n = 4, (4 if kind == "self" else 6)
        for direction in ("diagonal", "anti_diagonal", "vertical"):
            lines = n if direction == "vertical" else m + n - 1
            right = 1 if kind == "cross" and direction != "diagonal" else 0
            mean = torch.rand(heads, lines, generator=g, dtype=torch.float64)
            kept = torch.rand(heads, lines, generator=g, dtype=torch.float64) < 0.5
            bias = torch.where(kept, mean - mean.max(1, keepdim=True).values, torch.full_like(mean, -math.inf))
            name = f"{kind}.{direction}"
            tensors[name + ".mean"] = mean
            tensors[name + ".bias"] = bias
            tensors[name + ".info"] = torch.tensor([m, n, right, 0], dtype=torch.int64)
            tensors[name + ".stats"] = torch.zeros(heads, 4, dtype=torch.float64)
    write_safetensors(path, tensors)
    return path


def scheme_entry(entry, folder):
    """A YAML entry for a registered scheme: its name with the options a tiny model needs."""
    parts = [f"name: {entry['name']}"]
    keys = {o["key"] for o in entry["options"]}
    if "max_position" in keys:
        parts.append("max_position: 64")
    if "max_k" in keys:
        parts.append("max_k: 8")
    if "bias" in keys:
        parts.append(f"bias: '{synthetic_calibration(os.path.join(folder, 'bias.safetensors'), 2)}'")
    return "{" + ", ".join(parts) + "}"


def train(folder, name, arch="decoder", position="{name: coupling, max_position: 16}", steps=20):
    path = os.path.join(folder, name + ".yaml")
    with open(path, "w") as f:
        f.write(TINY.format(name=name, arch=arch, position=position, steps=steps))
    return lengen.run(path, overrides={"threads": 1}, out=os.path.join(folder, "runs"))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lengen-python"))


@pytest.fixture(scope="module")
def tiny(folder):
    return train(folder, "tiny", steps=40)


def test_load_run_reads_the_run(tiny):
    run = lengen.load_run(tiny.dir)
    assert run.config["name"] == "tiny"
    assert run.config["model"]["d_model"] == 16
    assert run.vocabulary == json.loads(cli("logits", run.dir, "1+2"))["vocabulary"]
    assert run.stages == []
    assert run.checkpoint.endswith("step-00000040.safetensors")
    assert "tiny" in repr(run)


def test_example_equals_the_cli(tiny):
    want = json.loads(cli("example", os.path.join(tiny.dir, "config.yaml"), "--query", "57+48", "--json"))[0]
    got = tiny.example("57+48")
    for key in ("text", "tokens", "token_ids", "position_ids", "loss_mask", "prompt_length", "meta"):
        assert got[key] == want[key], key


@pytest.mark.parametrize("arch", [a["name"] for a in lengen.registered("architecture")])
def test_logits_equal_the_cli_for_every_architecture(folder, arch):
    run = train(folder, "arch-" + arch, arch=arch, position="{name: rpe_k}" if arch != "decoder" else
                "{name: coupling, max_position: 16}", steps=10)
    for query in ("1+2", "57+48", "123+9"):
        want = json.loads(cli("logits", run.dir, query))
        out = run.forward(query)
        got = out.last_logits[0].to(torch.float64)
        assert got.tolist() == want["logits"], (arch, query)  # exactly: the CLI prints float32 as float64
        if run.architecture == "decoder":
            assert torch.equal(out.logits[0, -1], out.last_logits[0])


def test_logits_equal_the_cli_for_every_scheme(folder):
    tried = []
    for entry in lengen.registered("position"):
        name = entry["name"]
        run = train(folder, "scheme-" + name, position=scheme_entry(entry, folder), steps=2)
        want = json.loads(cli("logits", run.dir, "57+48"))
        got = run.forward("57+48").last_logits[0].to(torch.float64)
        assert got.tolist() == want["logits"], name
        tried.append(name)
    assert len(tried) >= 10  # every built-in scheme and plugin on the search path


def test_a_batch_gives_each_query_its_own_logits(tiny):
    queries = ["1+2", "57+48", "999+1", "12+345"]
    batch = tiny.forward(queries)
    assert batch.lengths.tolist() == [len(tiny.example(q)["token_ids"][: tiny.example(q)["prompt_length"]])
                                      for q in queries]
    for i, q in enumerate(queries):
        alone = tiny.forward(q).last_logits[0]
        assert torch.allclose(batch.last_logits[i], alone, atol=1e-6, rtol=0)
    # token ids and example dicts are fed too
    ex = tiny.example("57+48")
    prompt = ex["token_ids"][: ex["prompt_length"]]
    assert torch.equal(tiny.forward([prompt]).last_logits, tiny.forward("57+48").last_logits)
    whole = tiny.forward(ex)
    assert whole.logits.shape[1] == len(ex["token_ids"])


def test_decode_equals_the_cli(tiny):
    for query in ("1+2", "57+48", "1234+99"):
        assert tiny.decode(query) == cli("decode", tiny.dir, query).splitlines()[0]
    details = tiny.decode_details("1+2")
    assert isinstance(details["correct"], bool) and details["response_ids"]


def test_attention_rows_are_distributions(tiny):
    out = tiny.forward(["57+48", "1+2"], capture=("attention",))
    assert out.attention_names == ["blocks.0", "blocks.1"]
    T = out.logits.shape[1]
    for a in out.attention:
        assert a.shape == (2, 2, T, T)
        rows = a[0].sum(-1)  # the longer query: every row is a distribution
        assert torch.allclose(rows, torch.ones_like(rows), atol=1e-5)
        assert torch.all(a[0].triu(1) == 0)  # causal: no weight on later tokens
    assert out.residual == []


def test_residual_stream_is_captured_per_block(tiny):
    out = tiny.forward("57+48", capture=("residual",))
    assert out.residual_names == ["blocks.0", "blocks.1"]
    assert [tuple(r.shape) for r in out.residual] == [(1, out.logits.shape[1], 16)] * 2
    assert out.attention == []


def test_ablating_a_head_changes_that_head_only(tiny):
    seen = {}

    def record(name):
        def keep(heads):
            seen[name] = heads.clone()
            return heads
        return keep

    base = tiny.forward("57+48", patch={"blocks.0.heads": record("base")})
    ablated = tiny.forward("57+48", patch={"layer.0.head.1": torch.zeros_like, "blocks.0.heads": record("ablated")})
    assert torch.all(seen["ablated"][:, 1] == 0)
    assert torch.equal(seen["ablated"][:, 0], seen["base"][:, 0])  # the other head untouched
    assert not torch.equal(seen["base"][:, 1], seen["ablated"][:, 1])
    assert not torch.equal(base.logits, ablated.logits)
    # a residual vector replaced: everything after block 0 changes, the captured stream shows it
    zeroed = tiny.forward("57+48", patch={"blocks.0": torch.zeros_like})
    assert torch.all(zeroed.residual[0] == 0)
    with pytest.raises(lengen.Error, match="matched nothing"):
        tiny.forward("57+48", patch={"blocks.7.head.0": torch.zeros_like})
    with pytest.raises(lengen.Error, match="2 heads"):
        tiny.forward("57+48", patch={"blocks.0.head.5": torch.zeros_like})
    with pytest.raises(lengen.Error, match="shape"):
        tiny.forward("57+48", patch={"blocks.0": lambda x: x[:, :1]})


def test_grid_and_evaluate_are_dataframes(tiny):
    grid = tiny.grid()
    with open(os.path.join(tiny.dir, "eval", "grid.csv")) as f:
        lines = f.read().splitlines()
    assert len(grid) == len(lines) - 1 == 4  # one row per cell, digits 1-4
    assert str(grid["digits"].dtype) == "int64" and str(grid["accuracy"].dtype) == "float64"
    again = tiny.evaluate()  # the run's own grid and samples: the same verdicts
    assert again["digits"].tolist() == grid["digits"].tolist()
    assert again["correct"].tolist() == grid["correct"].tolist()
    fewer = tiny.evaluate(grid={"digits": [2, 5]}, samples=5)
    assert fewer["digits"].tolist() == [2, 5] and fewer["samples"].tolist() == [5, 5]


def test_read_sweep_gives_every_point_and_cell(folder, tiny):
    base = os.path.join(folder, "tiny.yaml")
    sweep = os.path.join(folder, "sw.yaml")
    with open(sweep, "w") as f:
        f.write(f"name: sw\nbase: {base}\noutput_dir: {os.path.join(folder, 'sweeps')}\n"
                "set: {train.steps: 4, threads: 1}\ngrid: {seed: [0, 1], model.heads: [1, 2]}\n"
                "executor: {workers: 1, threads_per_run: 1}\n")
    frame = lengen.sweep(sweep)  # the CLI's local executor, in this process
    assert frame.equals(lengen.read_sweep(os.path.join(folder, "sweeps", "sw")))
    again = subprocess.run([CLI, "sweep", sweep], capture_output=True, text=True)
    assert "4 points, 0 to run" in again.stdout + again.stderr  # the same folder, as the CLI sees it
    assert len(frame) == 4 * 4  # points x cells
    assert {"point", "config", "seed", "model.heads", "digits", "accuracy"} <= set(frame.columns)
    assert sorted(set(frame["seed"])) == [0, 1]
    with pytest.raises(lengen.Error, match="not a sweep folder"):
        lengen.read_sweep(folder)


def test_bad_input_raises_lengen_error(tiny, folder):
    with pytest.raises(lengen.Error, match="nowhere"):
        lengen.load_run(os.path.join(folder, "nowhere"))
    with pytest.raises(lengen.Error, match="no stage 'base'"):
        lengen.load_run(tiny.dir, stage="base")
    with pytest.raises(lengen.Error, match="stepz"):
        lengen.load_run(tiny.dir, overrides={"train.stepz": 3})
    with pytest.raises(lengen.Error):
        tiny.forward("57*48")  # not an addition
    with pytest.raises(lengen.Error, match="capture"):
        tiny.forward("1+2", capture=("gradients",))


def test_a_staged_run_opens_at_each_stage(folder):
    path = os.path.join(folder, "staged.yaml")
    with open(path, "w") as f:
        f.write(TINY.format(name="staged", arch="decoder", position="{name: coupling, max_position: 16}", steps=4)
                + "stages:\n  - {name: base, kind: train}\n  - {name: more, kind: train, init_from: base, "
                  "train: {steps: 6}}\n  - {name: final, kind: eval}\n")
    run = lengen.run(path, overrides={"threads": 1}, out=os.path.join(folder, "runs"))
    assert [s["name"] for s in run.stages] == ["base", "more", "final"]
    base = lengen.load_run(run.dir, stage="base")
    assert base.checkpoint.endswith(os.path.join("stages", "base", "checkpoints", "step-00000004.safetensors"))
    final = lengen.load_run(run.dir, stage="final")  # an eval stage: the model it evaluated
    assert final.checkpoint == run.checkpoint
    assert not torch.equal(base.forward("1+2").logits, final.forward("1+2").logits)


def test_the_package_imports_without_matplotlib():
    code = "import sys; sys.modules['matplotlib'] = None; import lengen; print(lengen.__version__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == lengen.__version__


def test_attention_equals_the_maps_lengen_attention_draws(tiny, folder):
    out_dir = os.path.join(folder, "attention")
    cli("attention", tiny.dir, "--cell", "digits=3", "-n", "5", "-o", out_dir)
    with open(os.path.join(out_dir, "attention.json")) as f:
        drawn = json.load(f)
    samples = tiny.samples({"digits": 3}, 5)
    assert drawn["samples"] == len(samples) == 5
    # The CLI averages teacher-forced passes over each whole sample but its last token (the
    # model's inputs); a causal map's rows do not depend on later tokens.
    maps = [tiny.forward(ex, capture=("attention",)).attention for ex in samples]
    for m in drawn["maps"]:
        ours = torch.stack([a[m["layer"]][0, m["head"]] for a in maps]).to(torch.float64).mean(0)
        T = len(m["weights"])
        want = torch.tensor(m["weights"], dtype=torch.float64)
        assert torch.allclose(ours[:T, :T], want, atol=1e-6, rtol=0), (m["name"], m["head"])


def test_progress_goes_to_python_logging(folder, caplog):
    import logging
    with caplog.at_level(logging.INFO, logger="lengen"):
        train(folder, "logged", steps=10)
    names = {r.name for r in caplog.records}
    assert "lengen.train" in names and "lengen.eval" in names
    assert any("trained 10 steps" in r.getMessage() for r in caplog.records if r.name == "lengen.train")


def test_the_installed_package_imports_and_finds_its_plugins(tmp_path):
    build = os.environ.get("LENGEN_BUILD_DIR")
    if not build:
        pytest.skip("LENGEN_BUILD_DIR not set (CTest sets it)")
    prefix = tmp_path / "prefix"
    done = subprocess.run(["cmake", "--install", build, "--prefix", str(prefix)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    packages = [os.path.join(d, "..") for d, _, files in os.walk(prefix) if "_paths.py" in files]
    assert len(packages) == 1
    code = ("import lengen; from lengen import _paths; import os; "
            "print(lengen.__file__); print(len(lengen.registered('position'))); print(os.path.exists(_paths.lengen_cli))")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(packages[0]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    file, schemes, cli_found = done.stdout.split()
    assert file.startswith(str(prefix))
    assert int(schemes) == len(lengen.registered("position"))  # the installed plugins
    assert cli_found == "True"


def test_ctrl_c_stops_a_run_resumably_and_the_next_run_goes_on(folder):
    path = os.path.join(folder, "slow.yaml")
    with open(path, "w") as f:
        f.write(TINY.format(name="slow", arch="decoder", position="{name: coupling, max_position: 16}", steps=3000)
                .replace("checkpoint_every: 10", "checkpoint_every: 50"))
    out = os.path.join(folder, "runs")
    checkpoints = os.path.join(out, "slow", "1", "checkpoints")
    # In a process of its own: Ctrl-C (SIGINT) once the first checkpoint is written, then the same
    # process resumes the run to its end.
    code = f"""
import os, signal, sys, threading, time
import lengen

def interrupt():
    while not (os.path.isdir({checkpoints!r}) and os.listdir({checkpoints!r})):
        time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGINT)

threading.Thread(target=interrupt, daemon=True).start()
try:
    lengen.run({path!r}, overrides={{"threads": 1}}, out={out!r})
    print("not interrupted")
except lengen.Interrupted as e:
    print("interrupted:", e)
run = lengen.run({path!r}, overrides={{"threads": 1}}, out={out!r}, resume=True)
print("finished", os.path.basename(run.checkpoint))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("interrupted:") for line in lines), done.stdout
    assert lines[-1] == "finished step-00003000.safetensors"


def test_read_sweep_puts_the_papers_figures_beside_its_cells(folder):
    base = os.path.join(folder, "cited.yaml")
    with open(base, "w") as f:
        f.write(TINY.format(name="cited", arch="decoder", position="{name: coupling, max_position: 16}", steps=4)
                + "paper:\n  cite: \"A. Author 2024\"\n  table: \"Table 1\"\n  values: {1: 100, 2: 90}\n")
    sweep = os.path.join(folder, "cited-sweep.yaml")
    with open(sweep, "w") as f:
        f.write(f"name: cited\nbase: {base}\noutput_dir: {os.path.join(folder, 'sweeps')}\n"
                "set: {threads: 1}\ngrid: {seed: [0, 1]}\nexecutor: {workers: 1, threads_per_run: 1}\n")
    frame = lengen.sweep(sweep)
    assert len(frame) == 2 * 4
    assert {"paper", "statistic"} <= set(frame.columns)
    by_digits = frame.groupby("digits")["paper"].first()
    assert by_digits[1] == 100 and by_digits[2] == 90
    assert by_digits[[3, 4]].isna().all()  # no figure of the paper's there


def test_a_stage_opens_with_the_model_its_chain_started_from(folder, tiny):
    # Two evaluation stages, the first of another run's model: both stages' model is that run's.
    path = os.path.join(folder, "evals-only.yaml")
    with open(path, "w") as f:
        f.write(TINY.format(name="evals-only", arch="decoder", position="{name: coupling, max_position: 16}",
                            steps=4)
                + f"stages:\n  - {{name: first, kind: eval, init_from: {tiny.dir}}}\n"
                  "  - {name: second, kind: eval, init_from: first}\n")
    out = os.path.join(folder, "runs")
    cli("run", path, "--set", "threads=1", "--set", f"output_dir={out}")
    for stage in ("first", "second"):
        opened = lengen.load_run(os.path.join(out, "evals-only", "1"), stage=stage)
        assert opened.checkpoint == tiny.checkpoint, stage
