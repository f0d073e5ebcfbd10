// Multi-stage runs end to end through the CLI: a two-stage run equals its second stage run by
// hand from the first run; a run killed with SIGKILL inside stage 2 resumes there (stage 1
// is not rerun) to the same final weights; evaluation during training writes its curve at
// the right steps and survives a resume.
#include "helpers.h"

#include "lengen/experiment/experiment.h"
#include "lengen/report/report.h"
#include "lengen/train/checkpoint.h"
#include "lengen/train/data.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
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
                     init_from,
                     steps);
}

using test::sh;

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

TEST_CASE("stages: a two-stage run equals its second stage run by hand from the first run",
          "[stages][cli]") {
  test::TempDir tmp;
  const std::string out = tmp.file("runs");
  // One file: train, fine-tune from it, evaluate.
  test::write_text(tmp.file("two.yaml"),
                   std::string(kHead) + "stages:\n  - {name: base}\n" + tune_stage("base", 40) +
                       "  - {name: final, kind: eval}\n");
  std::string log = sh(fmt::format("run {} --set output_dir={}", tmp.file("two.yaml"), out));
  CHECK_THAT(log,
             Contains("stage 1/3 'base'") && Contains("stage 2/3 'tune'") &&
                 Contains("stage 3/3 'final'"));
  const fs::path run = fs::path(out) / "ft" / "4";
  for (const char* f : {"config.yaml",
                        "stages/base/checkpoints/step-00000030.safetensors",
                        "stages/base/stage.json",
                        "stages/tune/checkpoints/step-00000040.safetensors",
                        "stages/tune/metrics.jsonl",
                        "stages/final/eval/summary.json",
                        "eval/summary.json",
                        "eval/grid.csv"}) {
    INFO(f);
    CHECK(fs::exists(run / f));
  }
  CHECK_THAT(test::read_text((run / "config.yaml").string()),
             Contains("stages:") && Contains("init_from: base"));
  CHECK(test::read_text((run / "eval" / "grid.csv").string()) ==
        test::read_text((run / "stages" / "final" / "eval" / "grid.csv").string()));

  // By hand: the first stage as a plain experiment, then a one-stage file from that run.
  test::write_text(tmp.file("first.yaml"), std::string(kHead));
  const std::string hand = tmp.file("hand");
  sh(fmt::format(
      "run {} --no-eval --set output_dir={} --set name=first", tmp.file("first.yaml"), hand));
  const std::string first_run = (fs::path(hand) / "first" / "4").string();
  test::write_text(tmp.file("second.yaml"),
                   std::string(kHead) + "stages:\n" + tune_stage(first_run, 40));
  sh(fmt::format("run {} --set output_dir={} --set name=second", tmp.file("second.yaml"), hand));
  require_same_weights(
      (run / "stages" / "base" / "checkpoints" / "step-00000030.safetensors").string(),
      (fs::path(first_run) / "checkpoints" / "step-00000030.safetensors").string());
  require_same_weights(
      (run / "stages" / "tune" / "checkpoints" / "step-00000040.safetensors").string(),
      (fs::path(hand) / "second" / "4" / "stages" / "tune" / "checkpoints" /
       "step-00000040.safetensors")
          .string());
  // The fine-tuned model is what `lengen eval` of the run evaluates.
  CHECK_THAT(sh(fmt::format("eval {}", run.string())), Contains("accuracy"));

  // Running it again without --resume refuses; with --resume every stage is skipped.
  int rc = 0;
  CHECK_THAT(sh(fmt::format("run {} --set output_dir={}", tmp.file("two.yaml"), out), &rc),
             Contains("already holds finished stages") && Contains("--resume"));
  CHECK(rc == 1);
  CHECK_THAT(sh(fmt::format("run {} --resume --set output_dir={}", tmp.file("two.yaml"), out)),
             Contains("'base' (train) finished earlier; skipped") &&
                 Contains("'tune' (train) finished earlier"));
  // A stage cannot start from a run that does not exist.
  test::write_text(tmp.file("nowhere.yaml"),
                   std::string(kHead) + "stages:\n" + tune_stage(tmp.file("nope"), 5));
  CHECK_THAT(sh(fmt::format(
                    "run {} --set output_dir={} --set name=nowhere", tmp.file("nowhere.yaml"), out),
                &rc),
             Contains("nowhere.yaml") && Contains("neither an earlier stage nor a run directory"));
  CHECK(rc == 1);
}

TEST_CASE("stages: a run killed with SIGKILL in stage 2 resumes there to the same final weights",
          "[stages][resume]") {
  test::TempDir tmp;
  test::write_text(tmp.file("k.yaml"),
                   std::string(kHead) + "stages:\n  - {name: base}\n" + tune_stage("base", 400));
  const std::string a = tmp.file("a"), b = tmp.file("b");
  sh(fmt::format("run {} --set output_dir={}", tmp.file("k.yaml"), a));
  const fs::path run_b = fs::path(b) / "ft" / "4";
  const fs::path ckpt_dir = run_b / "stages" / "tune" / "checkpoints";
  REQUIRE(test::kill_hard_when_file_appears(
      fmt::format("{} run {} --set output_dir={}", LENGEN_CLI, tmp.file("k.yaml"), b),
      ckpt_dir.string(),
      ".safetensors",
      tmp.str()));
  CHECK(!fs::exists(ckpt_dir / "step-00000400.safetensors"));
  CHECK(!fs::exists(run_b / "stages" / "tune" / "stage.json"));
  const auto base_marker = test::read_text((run_b / "stages" / "base" / "stage.json").string());
  REQUIRE(!base_marker.empty());
  std::string log = sh(fmt::format("run {} --resume --set output_dir={}", tmp.file("k.yaml"), b));
  CHECK_THAT(log, Contains("'base' (train) finished earlier; skipped") && Contains("resumed from"));
  CHECK(test::read_text((run_b / "stages" / "base" / "stage.json").string()) == base_marker);
  require_same_weights(
      (fs::path(a) / "ft" / "4" / "stages" / "tune" / "checkpoints" / "step-00000400.safetensors")
          .string(),
      (ckpt_dir / "step-00000400.safetensors").string());
}

TEST_CASE("stages: evaluation during training writes its curve at the right steps",
          "[stages][curve]") {
  test::TempDir tmp;
  std::string y = std::string(kHead);
  y.replace(y.find("  log_every: 10"),
            15,
            "  log_every: 10\n  keep_checkpoints: 2\n  eval_every: 12\n  eval_grid: {samples: 5, "
            "grid: {digits: [1, 3]}}");
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

TEST_CASE(
    "stages: a self_label round labels queries with the model and a later stage trains on the "
    "labels",
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
  CHECK_THAT(
      log,
      Contains("stage 2/3 'label1' (self_label), from base") && Contains("labelled 64/64 queries"));
  const fs::path run = fs::path(out) / "ft" / "4";
  const fs::path labels = run / "stages" / "label1" / "labels.jsonl";
  REQUIRE(fs::exists(labels));
  const auto summary =
      nlohmann::json::parse(test::read_text((run / "stages" / "label1" / "summary.json").string()));
  const int64_t kept = summary["kept"].get<int64_t>();
  CHECK(summary["generated"].get<int64_t>() == 64);
  CHECK(kept + summary["dropped_no_eos"].get<int64_t>() +
            summary["dropped_length"].get<int64_t>() ==
        64);
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
  CHECK_THAT(
      sh(fmt::format("example {} --set output_dir={} --stage round1 --source r1 -n 2", file, out)),
      Contains(fmt::format("{} labels of stage 'label1'", kept)));

  // Deterministic per seed: another run directory gets the same labels.
  const std::string other = tmp.file("b");
  sh(fmt::format("run {} --no-eval --set output_dir={}", file, other));
  const std::string text = test::read_text(labels.string());
  CHECK(test::read_text(
            (fs::path(other) / "ft" / "4" / "stages" / "label1" / "labels.jsonl").string()) ==
        text);
  // A round killed before it finished runs again on --resume, to the same labels.
  fs::remove(run / "stages" / "label1" / "stage.json");
  fs::remove(labels);
  fs::remove_all(run / "stages" / "round1");
  log = sh(fmt::format("run {} --resume --no-eval --set output_dir={}", file, out));
  CHECK_THAT(
      log,
      Contains("'base' (train) finished earlier; skipped") && Contains("labelled 64/64 queries"));
  CHECK(test::read_text(labels.string()) == text);
}

TEST_CASE("stages: self_improve rounds with a majority vote, and the vote's filter",
          "[stages][self_label]") {
  test::TempDir tmp;
  // A model that knows the format of 1-2 digit sums and some sums (as above).
  std::string head = kHead;
  head.replace(head.find("d_model: 32, d_ff: 64"), 21, "d_model: 64, d_ff: 128");
  head.replace(head.find("steps: 30"), 9, "steps: 300");
  head.replace(head.find("batch_size: 16"), 14, "batch_size: 32");
  head.replace(head.find("lr: 0.003"), 9, "lr: 0.006");
  const std::string out = tmp.file("runs");
  const std::string base_file = tmp.file("base.yaml");
  test::write_text(base_file, head);
  sh(fmt::format("run {} --no-eval --set output_dir={}", base_file, out));
  const std::string base = (fs::path(out) / "ft" / "4").string();

  // One labelling stage, three ways: alone; with the same model as a voter that must agree
  // (identical answers: nothing is dropped, the same labels); with a barely trained voter.
  auto label_run = [&](const std::string& dir, const std::string& extra) {
    const std::string f = tmp.file(dir + ".yaml");
    test::write_text(
        f,
        head + fmt::format("stages:\n  - {{name: weak, train: {{steps: 2}}}}\n"
                           "  - {{name: lab, kind: self_label, init_from: {}, lengths: [3, 3], "
                           "samples: 48, batch_size: 16{}}}\n",
                           base,
                           extra));
    sh(fmt::format("run {} --no-eval --set output_dir={}", f, tmp.file(dir)));
    const fs::path st = fs::path(tmp.file(dir)) / "ft" / "4" / "stages" / "lab";
    return std::make_pair(test::read_text((st / "labels.jsonl").string()),
                          nlohmann::json::parse(test::read_text((st / "summary.json").string())));
  };
  const auto [alone, s_alone] = label_run("alone", "");
  const auto [same, s_same] = label_run("same", fmt::format(", voters: [{}], agree: 2", base));
  const auto [weak, s_weak] = label_run("weak", ", voters: [weak], agree: 2");
  CHECK(s_alone["models"].get<int64_t>() == 1);
  CHECK(s_same["models"].get<int64_t>() == 2);
  CHECK(s_same["dropped_vote"].get<int64_t>() == 0);
  CHECK(same == alone);
  for (const auto& s : {s_alone, s_same, s_weak}) {
    CHECK(s["kept"].get<int64_t>() + s["dropped_no_eos"].get<int64_t>() +
              s["dropped_length"].get<int64_t>() + s["dropped_vote"].get<int64_t>() ==
          48);
  }
  // A voter that disagrees removes labels, and only by the vote (the first model's answers are
  // the same, so the other filters drop no more than alone; a label both models give is kept).
  CHECK(s_weak["dropped_vote"].get<int64_t>() > 0);
  CHECK(s_weak["kept"].get<int64_t>() < s_alone["kept"].get<int64_t>());
  CHECK(s_weak["dropped_no_eos"].get<int64_t>() + s_weak["dropped_length"].get<int64_t>() <=
        s_alone["dropped_no_eos"].get<int64_t>() + s_alone["dropped_length"].get<int64_t>());

  // Two rounds with a second lineage from the same base: the compact form's stages run in
  // order, each round trains on every round's labels, and the picture compares the rounds.
  const std::string file = tmp.file("si.yaml");
  test::write_text(file,
                   head + fmt::format(R"(eval: {{samples: 8, grid: {{digits: [1, 4]}}}}
stages:
  - name: si
    kind: self_improve
    init_from: {0}
    voters: [{0}]
    rounds: 2
    lengths: [2, 3]
    length_step: 1
    samples: 48
    batch_size: 16
    train: {{steps: 10, optimizer: {{name: adam, lr: 0.0003}}}}
)",
                                      base));
  // Without evaluation the rounds run and the picture waits; --resume then adds both.
  const std::string quiet =
      sh(fmt::format("run {} --no-eval --set output_dir={}", file, tmp.file("si")));
  CHECK_THAT(quiet, Contains("stage 4/9 'si1_v1' (train)") && Contains("stage 7/9 'si2' (train)"));
  CHECK_THAT(quiet,
             !Contains("si2_v1"));  // the voter lineage's last round would vote in no later round
  CHECK_THAT(quiet, !Contains("'si_rounds'"));
  const std::string log =
      sh(fmt::format("run {} --resume --set output_dir={}", file, tmp.file("si")));
  CHECK_THAT(log,
             Contains("'si1' (train) finished earlier; skipped") &&
                 Contains("stage 9/9 'si_rounds' (compare_stages)"));
  const fs::path run = fs::path(tmp.file("si")) / "ft" / "4";
  const auto r2 = nlohmann::json::parse(
      test::read_text((run / "stages" / "si2_label" / "summary.json").string()));
  CHECK(r2["lengths"] == nlohmann::json::array({3, 4}));
  CHECK(r2["models"].get<int64_t>() == 2);
  int64_t kept = 0;
  for (const char* st : {"si1_label", "si2_label"}) {
    kept += nlohmann::json::parse(
                test::read_text((run / "stages" / st / "summary.json").string()))["kept"]
                .get<int64_t>();
  }
  CHECK_THAT(
      sh(fmt::format(
          "example {} --set output_dir={} --stage si2 --source self -n 1", file, tmp.file("si"))),
      Contains(fmt::format("{} labels of stages 'si1_label', 'si2_label'", kept)));
  CHECK(fs::exists(run / "stages" / "si1_v1" / "checkpoints" / "step-00000010.safetensors"));
  CHECK(!fs::exists(run / "stages" / "si2_v1"));
  // stages.csv: a row per round (0, 1, 2) and length, the rows of each round its evaluation's.
  const std::string csv = test::read_text((run / "stages" / "si_rounds" / "stages.csv").string());
  CHECK(fs::exists(run / "stages" / "si_rounds" / "plots" / "stages.png") == plotting_available());
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 3 * 4);
  // Round 2's rows are its evaluation's (digits, samples, correct, accuracy as grid.csv has them).
  std::istringstream rows(
      test::read_text((run / "stages" / "si2_eval" / "eval" / "grid.csv").string()));
  std::string line;
  std::getline(rows, line);  // the header
  int64_t seen = 0;
  while (std::getline(rows, line)) {
    size_t end = 0;
    for (int commas = 0; end < line.size() && !(line[end] == ',' && ++commas == 4); ++end) {
    }
    const std::string first4 = line.substr(0, end);
    CHECK_THAT(csv, Contains("si2_eval," + first4 + "\n"));
    ++seen;
  }
  CHECK(seen == 4);
}
