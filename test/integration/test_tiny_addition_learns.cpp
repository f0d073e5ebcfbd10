// A tiny model of every architecture (decoder, encoder_decoder, encoder, a looped decoder)
// must learn in-distribution addition on CPU; on that trained model the teacher-forced
// exact-match verdict equals greedy decoding (KV-cached for the autoregressive ones) sample
// by sample, and decoding feeds the same position IDs as teacher forcing on correct responses.
#include "helpers.h"

#include "lengen/eval/decode.h"
#include "lengen/eval/evaluator.h"
#include "lengen/experiment/experiment.h"
#include "lengen/model/architecture.h"
#include "lengen/train/trainer.h"

using namespace lengen;

namespace {

const char* kTiny = R"(name: tiny
seed: 1
task: {name: addition, train_digits: [1, 4], eval_digits: [1, 8]}
model: {ARCH, heads: 2, d_model: 64, d_ff: 128, norm: rmsnorm, activation: gelu}
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

TEST_CASE("integration: a tiny coupled model learns addition; verdicts agree",
          "[integration][learns]") {
  // The encoder reads no earlier output digit, so carries take depth: one layer reaches 86% at
  // 3 digits in 2000 steps, three layers 98.7% at 3 on LibTorch 1.13 but 94.7% on 2.6 (other
  // kernels, another trajectory), so it trains 3000 steps. It is held to the 3-digit criterion
  // (the first requirement: "learns in-distribution 3-digit addition"), the others to 4 digits.
  const std::string arch = GENERATE(as<std::string>{},
                                    "arch: decoder, layers: 1",
                                    "arch: encoder_decoder, layers: 1, encoder_layers: 1",
                                    "arch: encoder, layers: 3",
                                    "arch: decoder, layers: 1, loops: 2");
  INFO(arch);
  test::TempDir dir;
  std::string yaml = kTiny;
  yaml.replace(yaml.find("ARCH"), 4, arch);
  test::write_text(dir.file("tiny.yaml"), yaml);
  std::vector<std::string> sets{"output_dir=" + dir.str()};
  if (arch.find("encoder,") != std::string::npos) {
    sets.push_back("train.steps=3000");
  }
  Experiment exp = Experiment::load(dir.file("tiny.yaml"), sets);
  Transformer model = exp.build_model(torch::kCPU);
  Trainer trainer(exp.train, exp.seed, *exp.task, model, torch::kCPU, exp.run_dir());
  TrainResult tr = trainer.run(false);
  CHECK(tr.steps == exp.train.steps);
  const std::string objective = model->arch().objective();
  CHECK(tr.final_loss < 0.05);

  auto results = evaluate_grid(model, *exp.task, exp.eval, torch::kCPU);
  for (const auto& r : results) {
    INFO("digits " << r.cell.at("digits") << ": " << r.accuracy);
    const int64_t held = objective == "per_position" ? 3 : 4;
    if (r.cell.at("digits") <= held) {
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
    auto decoded = decode(model, *exp.task, exs, torch::kCPU, &fed);
    if (objective != "per_position") {
      // The prompt-only entry point decodes the same.
      CHECK(greedy_decode(model, *exp.task, prompts, torch::kCPU) == decoded);
    }
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
        while (k < decoded[i].size() && p + k < ref.size() && ref[p + k] == decoded[i][k]) {
          ++k;
        }
        REQUIRE(k < decoded[i].size());
        REQUIRE(p + k < ref.size());
        // Index of the first response token among the batch's targets, per layout.
        const int64_t origin = objective == "next_token" ? exs[i].prompt_length - 1
                               : objective == "seq2seq"  ? 0
                                                         : exs[i].prompt_length;
        CHECK(first[i].position == origin + static_cast<int64_t>(k));
        CHECK(first[i].expected == ref[p + k]);
        CHECK(first[i].predicted == decoded[i][k]);
      }
      correct += ok ? 1 : 0;
      ++total;
      if (ok) {
        // The IDs decoding fed (prompt + every response token but the final EOS) are the
        // teacher-forced IDs of those tokens.
        // (per_position: every slot's ID, fed at once.)
        for (size_t l = 0; l < fed[i].size(); ++l) {
          REQUIRE(fed[i][l].size() == exs[i].tokens.size() - (objective == "per_position" ? 0 : 1));
          CHECK(std::equal(fed[i][l].begin(), fed[i][l].end(), exs[i].position_ids[l].begin()));
        }
      }
    }
  }
  CHECK(agree == total);
  // Both outcomes occur, so the agreement is not vacuous.
  CHECK(correct > total / 3);
  CHECK(correct < total);

  // How the samples are cut into batches (eval.batch_size, eval.batch_tokens) changes no
  // verdict and no first error: mixed lengths, one pass per sample as the reference.
  std::vector<Example> mixed;
  for (int i = 0; i < 60; ++i) {
    mixed.push_back(exp.task->sample_eval({{"digits", 1 + i % 7}}, rng));
  }
  auto alone = teacher_forced_first_errors(model, *exp.task, mixed, torch::kCPU, 1);
  int64_t alone_correct = 0;
  for (const auto& e : alone) {
    alone_correct += e.position < 0 ? 1 : 0;
  }
  CHECK(alone_correct > 0);
  CHECK(alone_correct < static_cast<int64_t>(mixed.size()));
  for (auto [size, tokens] : std::vector<std::pair<int64_t, int64_t>>{
           {64, 0}, {1000, int64_t{1} << 30}, {1000, 100}, {7, 64}}) {
    INFO("batch_size " << size << ", batch_tokens " << tokens);
    auto got = teacher_forced_first_errors(model, *exp.task, mixed, torch::kCPU, size, tokens);
    for (size_t i = 0; i < mixed.size(); ++i) {
      CHECK(got[i].position == alone[i].position);
      CHECK(got[i].expected == alone[i].expected);
      CHECK(got[i].predicted == alone[i].predicted);
    }
  }
}
