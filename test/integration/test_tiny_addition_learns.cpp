// A tiny model must learn in-distribution addition on CPU; on that trained model the
// teacher-forced exact-match verdict equals true KV-cached greedy decoding sample by sample,
// and decoding feeds the same position IDs as teacher forcing on correct responses.
#include "helpers.h"
#include "lengen/experiment/experiment.h"
#include "lengen/train/evaluator.h"
#include "lengen/train/trainer.h"

using namespace lengen;

namespace {

const char* kTiny = R"(name: tiny
seed: 1
task: {name: addition, train_digits: [1, 4], eval_digits: [1, 8]}
model: {layers: 1, heads: 2, d_model: 64, d_ff: 128, norm: rmsnorm, activation: gelu}
position: [{name: coupling, max_position: 16}]
train:
  steps: 2000
  batch_size: 128
  optimizer: {name: adam, lr: 0.006}
  schedule: {warmup_steps: 60, decay: cosine}
  log_every: 500
  checkpoint_every: 0
eval: {samples: 150}
)";

}  // namespace

TEST_CASE("integration: a tiny coupled model learns addition; verdicts agree", "[integration]") {
  test::TempDir dir;
  test::write_text(dir.file("tiny.yaml"), kTiny);
  Experiment exp = Experiment::load(dir.file("tiny.yaml"), {"output_dir=" + dir.str()});
  Transformer model = exp.build_model(torch::kCPU);
  Trainer trainer(exp.train, exp.seed, *exp.task, model, torch::kCPU, exp.run_dir());
  TrainResult tr = trainer.run(false);
  CHECK(tr.steps == 2000);
  CHECK(tr.final_loss < 0.05);

  auto results = evaluate_grid(model, *exp.task, exp.eval, torch::kCPU);
  for (const auto& r : results) {
    INFO("digits " << r.cell.at("digits") << ": " << r.accuracy);
    if (r.cell.at("digits") <= 4) {
      CHECK(r.accuracy >= 0.95);  // trained lengths
    }
  }

  // Teacher-forced verdicts == greedy KV-cached decoding verdicts, sample by sample.
  Rng rng(99);
  int64_t agree = 0, correct = 0, total = 0;
  for (int64_t digits = 1; digits <= 8; ++digits) {
    std::vector<Example> exs;
    std::vector<std::vector<int64_t>> prompts;
    for (int i = 0; i < 40; ++i) {
      exs.push_back(exp.task->sample_eval({{"digits", digits}}, rng));
      prompts.emplace_back(exs.back().tokens.begin(),
                           exs.back().tokens.begin() + exs.back().prompt_length);
    }
    auto tf = teacher_forced_exact_match(model, *exp.task, exs, torch::kCPU, 64);
    auto first = teacher_forced_first_errors(model, *exp.task, exs, torch::kCPU, 64);
    std::vector<PositionIds> fed;
    auto decoded = greedy_decode(model, *exp.task, prompts, torch::kCPU, &fed);
    for (size_t i = 0; i < exs.size(); ++i) {
      const bool ok = exp.task->exact_match(exs[i], decoded[i]);
      agree += ok == tf[i] ? 1 : 0;
      CHECK((first[i].position < 0) == tf[i]);
      if (!ok) {
        // The teacher-forced first error is where the greedy decode first leaves the
        // reference: same position, same expected and same predicted token.
        const auto& ref = exs[i].tokens;
        const auto p = static_cast<size_t>(exs[i].prompt_length);
        size_t k = 0;
        while (k < decoded[i].size() && p + k < ref.size() &&
               ref[p + k] == decoded[i][k]) {
          ++k;
        }
        REQUIRE(k < decoded[i].size());
        REQUIRE(p + k < ref.size());
        CHECK(first[i].position == exs[i].prompt_length - 1 + static_cast<int64_t>(k));
        CHECK(first[i].expected == ref[p + k]);
        CHECK(first[i].predicted == decoded[i][k]);
      }
      correct += ok ? 1 : 0;
      ++total;
      if (ok) {
        // The IDs decoding fed (prompt + every response token but the final EOS) are the
        // teacher-forced IDs of those tokens.
        for (size_t l = 0; l < fed[i].size(); ++l) {
          REQUIRE(fed[i][l].size() == exs[i].tokens.size() - 1);
          CHECK(std::equal(fed[i][l].begin(), fed[i][l].end(), exs[i].position_ids[l].begin()));
        }
      }
    }
  }
  CHECK(agree == total);
  // Both outcomes occur, so the agreement is not vacuous.
  CHECK(correct > total / 3);
  CHECK(correct < total);
}
