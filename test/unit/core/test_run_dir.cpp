// RunDir, the one owner of a run folder's layout: where each file goes, how checkpoints are
// named and found, a stage's folder as a run folder of its own, and what a fresh start removes.
#include "helpers.h"

#include "lengen/core/lock.h"
#include "lengen/core/run_dir.h"
#include "lengen/experiment/experiment.h"
#include "lengen/stage/run.h"
#include "lengen/stage/stage.h"

#include <filesystem>

using namespace lengen;
namespace fs = std::filesystem;

namespace {
// Writes `text` to `file`, making its folders.
void put(const fs::path& file, const std::string& text = "x") {
  fs::create_directories(file.parent_path());
  test::write_text(file.string(), text);
}
}  // namespace

TEST_CASE("run_dir: the layout of a run and of its stages", "[run_dir]") {
  const RunDir run("runs/quickstart/0");
  CHECK(run.config() == fs::path("runs/quickstart/0/config.yaml"));
  CHECK(run.lock_file() == fs::path(FolderLock::file_in("runs/quickstart/0")));
  CHECK(run.checkpoint(12) == fs::path("runs/quickstart/0/checkpoints/step-00000012.safetensors"));
  CHECK(run.summary() == fs::path("runs/quickstart/0/eval/summary.json"));
  CHECK(run.grid() == fs::path("runs/quickstart/0/eval/grid.csv"));
  CHECK(run.plot("grid.png") == fs::path("runs/quickstart/0/plots/grid.png"));
  CHECK(run.attention("digits=5") == fs::path("runs/quickstart/0/attention/digits=5"));
  CHECK(run.sweep_marker("failed") == fs::path("runs/quickstart/0/sweep-failed.json"));
  CHECK(run.sweep_log() == fs::path("runs/quickstart/0/sweep.log"));
  // A stage's folder has the same layout, one level down; so has a named evaluation.
  const RunDir base = run.stage("base");
  CHECK(base.root() == fs::path("runs/quickstart/0/stages/base"));
  CHECK(base.checkpoint(0) ==
        fs::path("runs/quickstart/0/stages/base/checkpoints/step-00000000.safetensors"));
  CHECK(base.labels() == fs::path("runs/quickstart/0/stages/base/labels.jsonl"));
  CHECK(base.stage_marker() == fs::path("runs/quickstart/0/stages/base/stage.json"));
  CHECK(run.named_eval("decode").summary() ==
        fs::path("runs/quickstart/0/evals/decode/eval/summary.json"));
  // Relative to a run, for messages and for a sweep's aggregate of one evaluation.
  CHECK(RunDir().named_eval("decode").eval() == fs::path("evals/decode/eval"));
  CHECK(RunDir().eval() == fs::path("eval"));
}

TEST_CASE("run_dir: checkpoints are found by name, oldest step first", "[run_dir]") {
  test::TempDir tmp;
  const RunDir run(tmp.str());
  CHECK(run.checkpoint_files().empty());  // no folder yet
  CHECK(run.newest_checkpoint().empty());
  CHECK_FALSE(run.ran());
  for (int64_t step : {100, 5, 20})
    put(run.checkpoint(step));
  // Not checkpoints: another extension, a torn write's temporary, another name.
  put(run.checkpoints() / "step-00000300.safetensors.tmp-7");
  put(run.checkpoints() / "notes.safetensors");
  put(run.checkpoints() / "step-00000400.json");
  const auto all = run.checkpoint_files();
  REQUIRE(all.size() == 3);
  CHECK(all[0] == run.checkpoint(5));
  CHECK(all[1] == run.checkpoint(20));
  CHECK(all[2] == run.checkpoint(100));
  CHECK(run.newest_checkpoint() == run.checkpoint(100).string());
  CHECK(RunDir::is_checkpoint(run.checkpoint(7)));
  CHECK_FALSE(RunDir::is_checkpoint(run.checkpoints() / "notes.safetensors"));
  CHECK(run.ran());
}

TEST_CASE("run_dir: a fresh start removes what training and evaluation wrote, and nothing else",
          "[run_dir]") {
  test::TempDir tmp;
  const RunDir run(tmp.str());
  for (const fs::path& f : {run.checkpoint(1),
                            run.summary(),
                            run.plot("grid.png"),
                            run.metrics(),
                            run.eval_curve(),
                            run.stage("base").stage_marker()}) {
    put(f);
  }
  put(run.config(), "name: x\n");
  put(run.named_eval("decode").summary(), "{}");
  for (const fs::path& output : run.outputs())
    fs::remove_all(output);
  CHECK_FALSE(run.ran());
  CHECK(fs::exists(run.config()));
  CHECK(fs::exists(run.named_eval("decode").summary()));
  CHECK(run.checkpoint_files().empty());
  CHECK_FALSE(fs::exists(run.metrics()));
  CHECK_FALSE(fs::exists(run.plots()));
}

TEST_CASE("run_dir: a trained run's files are where RunDir says", "[run_dir]") {
  test::TempDir tmp;
  test::write_text(tmp.file("e.yaml"), R"(name: tiny
seed: 3
task: {name: addition, train_digits: [1, 2], eval_digits: [1, 2]}
model: {layers: 1, heads: 1, d_model: 8, d_ff: 16}
position: [nope]
train: {steps: 4, batch_size: 2, log_every: 2, checkpoint_every: 2, eval_every: 2}
eval: {samples: 2}
)");
  const Experiment exp =
      Experiment::load(tmp.file("e.yaml"), {"output_dir=" + tmp.str(), "threads=1"});
  run_experiment(exp, RunOptions{});
  const RunDir run(exp.run_dir());
  CHECK(run.root() == fs::path(tmp.str()) / "tiny" / "3");
  CHECK(fs::exists(run.config()));
  CHECK(run.newest_checkpoint() == run.checkpoint(4).string());
  for (const fs::path& f :
       {run.metrics(), run.eval_curve(), run.summary(), run.grid(), run.tensorboard()}) {
    INFO(f.string());
    CHECK(fs::exists(f));
  }
  CHECK(final_checkpoint(run.str()) == run.checkpoint(4).string());
}
