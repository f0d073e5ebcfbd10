#pragma once

// The one owner of a run directory's layout: every path of a run and of its stages is built
// here and nowhere else (docs/architecture.md, "The run folder").
//
//   RUN/config.yaml             the resolved experiment (lengen config RUN prints it)
//   RUN/lengen.lock             the writer's lock (lengen/core/lock.h)
//   RUN/checkpoints/step-NNNNNNNN.safetensors
//   RUN/metrics.jsonl           training's log, one record per log_every steps
//   RUN/tensorboard/            TensorBoard's event files
//   RUN/eval_curve.jsonl        train.eval_every's accuracy records
//   RUN/eval/                   the evaluation: grid.csv, summary.json, breakdown.csv,
//                               examples.jsonl, paper.csv (the last evaluation, for staged runs)
//   RUN/plots/                  its pictures (grid.png, eval_curve.png, paper.png, stages.png)
//   RUN/evals/NAME/             `lengen eval --name NAME`: a run folder of its own (eval/, plots/)
//   RUN/attention/CELL/         `lengen attention`'s maps
//   RUN/sweep.log, RUN/sweep-{running,stopped,failed}.json   a sweep point's log and state
//   RUN/stages/NAME/            a stage of a staged run: the same layout again, with
//                               stage.json (written when the stage finished); a self-labelling
//                               round adds labels.jsonl and summary.json, compare_stages
//                               stages.csv
//
// A stage's folder is a RunDir too (`stage(name)`), so code that writes checkpoints or an
// evaluation does not care whether it writes a whole run or one of its stages.

#include "lengen/core/export.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lengen {

class LENGEN_API RunDir {
 public:
  RunDir() = default;

  explicit RunDir(std::filesystem::path root) : root_(std::move(root)) {}

  const std::filesystem::path& root() const { return root_; }

  std::string str() const { return root_.string(); }

  std::filesystem::path config() const { return root_ / "config.yaml"; }

  std::filesystem::path lock_file() const;

  std::filesystem::path metrics() const { return root_ / "metrics.jsonl"; }

  std::filesystem::path tensorboard() const { return root_ / "tensorboard"; }

  std::filesystem::path eval_curve() const { return root_ / "eval_curve.jsonl"; }

  std::filesystem::path checkpoints() const { return root_ / "checkpoints"; }

  /// checkpoints/step-NNNNNNNN.safetensors (eight digits, so names sort by step).
  std::filesystem::path checkpoint(int64_t step) const;
  /// Whether `file` is named as checkpoint() names them.
  static bool is_checkpoint(const std::filesystem::path& file);
  /// The checkpoints there are, oldest step first.
  std::vector<std::filesystem::path> checkpoint_files() const;
  /// The newest checkpoint; "" when there is none.
  std::string newest_checkpoint() const;

  /// The evaluation's folder and its files.
  std::filesystem::path eval() const { return root_ / "eval"; }

  std::filesystem::path summary() const { return eval() / "summary.json"; }

  std::filesystem::path grid() const { return eval() / "grid.csv"; }

  std::filesystem::path breakdown() const { return eval() / "breakdown.csv"; }

  std::filesystem::path examples() const { return eval() / "examples.jsonl"; }

  /// plots/, and plots/NAME (e.g. "grid.png").
  std::filesystem::path plots() const { return root_ / "plots"; }

  std::filesystem::path plot(const std::string& name) const { return plots() / name; }

  /// stages/ and the folder of the stage NAME.
  std::filesystem::path stages() const { return root_ / "stages"; }

  RunDir stage(const std::string& name) const { return RunDir(stages() / name); }

  /// A stage's "finished" marker, and a self-labelling round's labels.
  std::filesystem::path stage_marker() const { return root_ / "stage.json"; }

  std::filesystem::path labels() const { return root_ / "labels.jsonl"; }

  /// The labelling round's counts (kept, dropped, right) beside its labels.
  std::filesystem::path labels_summary() const { return root_ / "summary.json"; }

  /// compare_stages' table of the stages it compares.
  std::filesystem::path stage_comparison() const { return root_ / "stages.csv"; }

  /// The folder of `lengen eval --name NAME`.
  RunDir named_eval(const std::string& name) const { return RunDir(root_ / "evals" / name); }

  /// `lengen attention`'s maps of one grid cell ("digits=12").
  std::filesystem::path attention(const std::string& cell) const {
    return root_ / "attention" / cell;
  }

  /// A sweep's point: its log, and the marker of its state ("running", "stopped", "failed").
  std::filesystem::path sweep_log() const { return root_ / "sweep.log"; }

  std::filesystem::path sweep_marker(const std::string& state) const {
    return root_ / ("sweep-" + state + ".json");
  }

  /// What a fresh start (`lengen run --fresh`) removes: everything training and evaluation wrote
  /// (config.yaml and named evaluations stay).
  std::vector<std::filesystem::path> outputs() const;

  /// Whether anything ran here: a checkpoint folder, a stage or a finished evaluation.
  bool ran() const;

 private:
  std::filesystem::path root_;
};

}  // namespace lengen
