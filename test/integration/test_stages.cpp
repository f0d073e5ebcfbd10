// Multi-stage runs end to end through the CLI: a two-stage run equals its second stage run by
// hand from the first run; a run killed with SIGKILL inside stage 2 resumes there (stage 1
// is not rerun) to the same final weights; evaluation during training writes its curve at
// the right steps and survives a resume.
#include "helpers.h"
#include "lengen/experiment/experiment.h"
#include "lengen/train/checkpoint.h"
#include "lengen/train/data.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <thread>

using namespace lengen;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

const char* kHead = R"(name: ft
seed: 4
task: {name: addition, train_digits: [1, 2], eval_digits: [1, 4]}
model: {layers: 1, heads: 2, d_model: 32, d_ff: 64}
position: [{name: coupling, max_position: 16}]
train:
  steps: 30
  batch_size: 16
  optimizer: {name: adam, lr: 0.003}
  log_every: 10
  checkpoint_every: 10
eval: {samples: 10}
)";

// Stage 2 of every run here: fine-tune on longer operands with its own optimizer.
std::string tune_stage(const std::string& init_from, int64_t steps) {
  return fmt::format(R"(  - name: tune
    init_from: {}
    task: {{train_digits: [1, 3]}}
    train: {{steps: {}, optimizer: {{name: adamw, lr: 0.001, weight_decay: 0.01}}, checkpoint_every: 20}}
)",
                     init_from, steps);
}

std::string sh(const std::string& args, int* rc = nullptr) { return test::lengen_cli(args, rc); }

void require_same_weights(const std::string& a, const std::string& b) {
  auto fa = load_safetensors(a), fb = load_safetensors(b);
  REQUIRE(fa.tensors.size() == fb.tensors.size());
  for (size_t i = 0; i < fa.tensors.size(); ++i) {
    INFO(fa.tensors[i].first);
    REQUIRE(fa.tensors[i].first == fb.tensors[i].first);
    CHECK(torch::equal(fa.tensors[i].second, fb.tensors[i].second));
  }
}

}  // namespace

TEST_CASE("stages: a two-stage run equals its second stage run by hand from the first run", "[stages][cli]") {
  test::TempDir tmp;
  const std::string out = tmp.file("runs");
  // One file: train, fine-tune from it, evaluate.
  test::write_text(tmp.file("two.yaml"), std::string(kHead) + "stages:\n  - {name: base}\n" + tune_stage("base", 40) +
                                             "  - {name: final, kind: eval}\n");
  std::string log = sh(fmt::format("run {} --set output_dir={}", tmp.file("two.yaml"), out));
  CHECK_THAT(log, Contains("stage 1/3 'base'") && Contains("stage 2/3 'tune'") && Contains("stage 3/3 'final'"));
  const fs::path run = fs::path(out) / "ft" / "4";
  for (const char* f : {"config.yaml", "stages/base/checkpoints/step-00000030.safetensors",
                        "stages/base/stage.json", "stages/tune/checkpoints/step-00000040.safetensors",
                        "stages/tune/metrics.jsonl", "stages/final/eval/summary.json", "eval/summary.json",
                        "eval/grid.csv"}) {
    INFO(f);
    CHECK(fs::exists(run / f));
  }
  CHECK_THAT(test::read_text((run / "config.yaml").string()), Contains("stages:") && Contains("init_from: base"));
  CHECK(test::read_text((run / "eval" / "grid.csv").string()) ==
        test::read_text((run / "stages" / "final" / "eval" / "grid.csv").string()));

  // By hand: the first stage as a plain experiment, then a one-stage file from that run.
  test::write_text(tmp.file("first.yaml"), std::string(kHead));
  const std::string hand = tmp.file("hand");
  sh(fmt::format("run {} --no-eval --set output_dir={} --set name=first", tmp.file("first.yaml"), hand));
  const std::string first_run = (fs::path(hand) / "first" / "4").string();
  test::write_text(tmp.file("second.yaml"), std::string(kHead) + "stages:\n" + tune_stage(first_run, 40));
  sh(fmt::format("run {} --set output_dir={} --set name=second", tmp.file("second.yaml"), hand));
  require_same_weights((run / "stages" / "base" / "checkpoints" / "step-00000030.safetensors").string(),
                       (fs::path(first_run) / "checkpoints" / "step-00000030.safetensors").string());
  require_same_weights((run / "stages" / "tune" / "checkpoints" / "step-00000040.safetensors").string(),
                       (fs::path(hand) / "second" / "4" / "stages" / "tune" / "checkpoints" / "step-00000040.safetensors")
                           .string());
  // The fine-tuned model is what `lengen eval` of the run evaluates.
  CHECK_THAT(sh(fmt::format("eval {}", run.string())), Contains("accuracy"));

  // Running it again without --resume refuses; with --resume every stage is skipped.
  int rc = 0;
  CHECK_THAT(sh(fmt::format("run {} --set output_dir={}", tmp.file("two.yaml"), out), &rc),
             Contains("already holds finished stages") && Contains("--resume"));
  CHECK(rc == 1);
  CHECK_THAT(sh(fmt::format("run {} --resume --set output_dir={}", tmp.file("two.yaml"), out)),
             Contains("'base' (train) finished earlier; skipped") && Contains("'tune' (train) finished earlier"));
  // A stage cannot start from a run that does not exist.
  test::write_text(tmp.file("nowhere.yaml"), std::string(kHead) + "stages:\n" + tune_stage(tmp.file("nope"), 5));
  CHECK_THAT(sh(fmt::format("run {} --set output_dir={} --set name=nowhere", tmp.file("nowhere.yaml"), out), &rc),
             Contains("nowhere.yaml") && Contains("neither an earlier stage nor a run directory"));
  CHECK(rc == 1);
}

TEST_CASE("stages: a run killed with SIGKILL in stage 2 resumes there to the same final weights", "[stages][resume]") {
  test::TempDir tmp;
  test::write_text(tmp.file("k.yaml"), std::string(kHead) + "stages:\n  - {name: base}\n" + tune_stage("base", 400));
  const std::string a = tmp.file("a"), b = tmp.file("b");
  sh(fmt::format("run {} --set output_dir={}", tmp.file("k.yaml"), a));
  const fs::path run_b = fs::path(b) / "ft" / "4";
  const fs::path ckpt_dir = run_b / "stages" / "tune" / "checkpoints";
  REQUIRE(test::kill_hard_when_file_appears(
      fmt::format("{} run {} --set output_dir={}", LENGEN_CLI, tmp.file("k.yaml"), b), ckpt_dir.string(),
      ".safetensors", tmp.str()));
  CHECK(!fs::exists(ckpt_dir / "step-00000400.safetensors"));
  CHECK(!fs::exists(run_b / "stages" / "tune" / "stage.json"));
  const auto base_marker = test::read_text((run_b / "stages" / "base" / "stage.json").string());
  REQUIRE(!base_marker.empty());
  std::string log = sh(fmt::format("run {} --resume --set output_dir={}", tmp.file("k.yaml"), b));
  CHECK_THAT(log, Contains("'base' (train) finished earlier; skipped") && Contains("resumed from"));
  CHECK(test::read_text((run_b / "stages" / "base" / "stage.json").string()) == base_marker);
  require_same_weights((fs::path(a) / "ft" / "4" / "stages" / "tune" / "checkpoints" / "step-00000400.safetensors").string(),
                       (ckpt_dir / "step-00000400.safetensors").string());
}

TEST_CASE("stages: evaluation during training writes its curve at the right steps", "[stages][curve]") {
  test::TempDir tmp;
  std::string y = std::string(kHead);
  y.replace(y.find("  log_every: 10"), 15, "  log_every: 10\n  keep_checkpoints: 2\n  eval_every: 12\n  eval_grid: {samples: 5, grid: {digits: [1, 3]}}");
  test::write_text(tmp.file("c.yaml"), y);
  const std::string out = tmp.file("runs");
  sh(fmt::format("run {} --set output_dir={}", tmp.file("c.yaml"), out));
  const fs::path run = fs::path(out) / "ft" / "4";
  auto steps_of = [&] {
    std::vector<int64_t> steps;
    std::ifstream in(run / "eval_curve.jsonl");
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      steps.push_back(j["step"].get<int64_t>());
      CHECK(j["cells"].size() == 3);  // the curve's own grid, not eval's 4 cells
      CHECK(j["cells"][0]["samples"].get<int64_t>() == 5);
    }
    return steps;
  };
  CHECK(steps_of() == std::vector<int64_t>{0, 12, 24, 30});
  // A resumed run (from the step-20 checkpoint) rewrites what follows it, once.
  fs::remove(run / "checkpoints" / "step-00000030.safetensors");
  sh(fmt::format("run {} --resume --no-eval --set output_dir={}", tmp.file("c.yaml"), out));
  CHECK(steps_of() == std::vector<int64_t>{0, 12, 24, 30});
}

TEST_CASE("stages: a self_label round labels queries with the model and a later stage trains on the labels",
          "[stages][self_label]") {
  test::TempDir tmp;
  const std::string file = tmp.file("si.yaml");
  // A model that has learned the format of 1-2 digit sums but not yet the sums (loss ~1.2).
  std::string head = kHead;
  head.replace(head.find("d_model: 32, d_ff: 64"), 21, "d_model: 64, d_ff: 128");
  head.replace(head.find("steps: 30"), 9, "steps: 300");
  head.replace(head.find("batch_size: 16"), 14, "batch_size: 32");
  head.replace(head.find("lr: 0.003"), 9, "lr: 0.006");
  test::write_text(file, head + R"(stages:
  - {name: base}
  - {name: label1, kind: self_label, lengths: [3, 3], samples: 64, batch_size: 16}
  - name: round1
    init_from: base
    task:
      mixture:
        - {source: standard, dataset_size: 100}
        - {source: r1, from_stage: label1}
    train: {steps: 20}
)");
  const std::string out = tmp.file("a");
  std::string log = sh(fmt::format("run {} --no-eval --set output_dir={}", file, out));
  CHECK_THAT(log, Contains("stage 2/3 'label1' (self_label), from base") && Contains("labelled 64/64 queries"));
  const fs::path run = fs::path(out) / "ft" / "4";
  const fs::path labels = run / "stages" / "label1" / "labels.jsonl";
  REQUIRE(fs::exists(labels));
  const auto summary = nlohmann::json::parse(test::read_text((run / "stages" / "label1" / "summary.json").string()));
  const int64_t kept = summary["kept"].get<int64_t>();
  CHECK(summary["generated"].get<int64_t>() == 64);
  CHECK(kept + summary["dropped_no_eos"].get<int64_t>() + summary["dropped_length"].get<int64_t>() == 64);
  REQUIRE(kept > 0);
  // The labels are the model's answers, not the task's: this model gets most of them wrong.
  CHECK(summary["kept_correct"].get<int64_t>() < kept);
  // Every kept label passes the filters: a 3-digit query, a response of the length the query
  // fixes, ending in EOS.
  Experiment exp = Experiment::load(file);
  const Task& task = *exp.task;
  const auto examples = read_labelled_examples(labels.string(), task);
  CHECK(static_cast<int64_t>(examples.size()) == kept);
  for (const auto& ex : examples) {
    const std::vector<int64_t> prompt(ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length);
    CHECK(ex.response().back() == task.vocabulary().eos());
    CHECK(static_cast<int64_t>(ex.response().size()) == task.max_response_length(prompt));
    CHECK(task.render(prompt).size() == std::string("$000+000=").size());
  }
  // The next stage trained on them; `lengen example` shows them.
  CHECK(fs::exists(run / "stages" / "round1" / "checkpoints" / "step-00000020.safetensors"));
  CHECK_THAT(sh(fmt::format("example {} --set output_dir={} --stage round1 --source r1 -n 2", file, out)),
             Contains(fmt::format("{} labels of stage 'label1'", kept)));

  // Deterministic per seed: another run directory gets the same labels.
  const std::string other = tmp.file("b");
  sh(fmt::format("run {} --no-eval --set output_dir={}", file, other));
  const std::string text = test::read_text(labels.string());
  CHECK(test::read_text((fs::path(other) / "ft" / "4" / "stages" / "label1" / "labels.jsonl").string()) == text);
  // A round killed before it finished runs again on --resume, to the same labels.
  fs::remove(run / "stages" / "label1" / "stage.json");
  fs::remove(labels);
  fs::remove_all(run / "stages" / "round1");
  log = sh(fmt::format("run {} --resume --no-eval --set output_dir={}", file, out));
  CHECK_THAT(log, Contains("'base' (train) finished earlier; skipped") && Contains("labelled 64/64 queries"));
  CHECK(test::read_text(labels.string()) == text);
}
