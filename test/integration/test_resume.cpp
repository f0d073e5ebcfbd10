// Resuming from a checkpoint reproduces the uninterrupted run's weights exactly, with online
// sampling and with a fixed training set, dropout and random offsets included.
#include "helpers.h"

#include "lengen/experiment/experiment.h"
#include "lengen/train/checkpoint.h"
#include "lengen/train/trainer.h"
#include "lengen/train/weights.h"

#include <filesystem>

using namespace lengen;
namespace fs = std::filesystem;

namespace {

const char* kSmall = R"(name: resume
seed: 4
task: {name: addition, train_digits: [1, 5], eval_digits: [1, 5]}
model: {layers: 2, heads: 2, d_model: 32, d_ff: 64, dropout: 0.1}
position: [{name: coupling, max_position: 20}]
train:
  steps: 30
  batch_size: 16
  optimizer: {name: adamw, lr: 0.003, weight_decay: 0.01}
  schedule: {warmup_steps: 5}
  checkpoint_every: 10
  keep_checkpoints: 5
eval: {samples: 4}
)";

std::vector<std::pair<std::string, torch::Tensor>> final_weights(const Experiment& exp,
                                                                 const std::string& dir,
                                                                 bool resume) {
  Transformer model = exp.build_model(torch::kCPU);
  Trainer trainer(exp.train, exp.seed, *exp.task, model, torch::kCPU, dir);
  trainer.run(resume);
  return named_weights(model);
}

}  // namespace

TEST_CASE("integration: resume reproduces an uninterrupted run", "[integration][resume]") {
  // Every architecture (the encoder-decoder's shared source/target offsets included).
  const std::string arch =
      GENERATE(as<std::string>{}, "decoder", "encoder_decoder", "encoder", "looped");
  for (const char* dataset : {"0", "50"}) {
    DYNAMIC_SECTION(arch << " / dataset_size " << dataset) {
      test::TempDir tmp;
      test::write_text(tmp.file("exp.yaml"), kSmall);
      std::vector<std::string> sets{std::string("train.dataset_size=") + dataset};
      if (arch == "looped") {
        sets.insert(sets.end(), {"model.loops=2", "model.input_injection=true"});
      } else {
        sets.push_back("model.arch=" + arch);
      }
      Experiment exp = Experiment::load(tmp.file("exp.yaml"), sets);
      const std::string a = tmp.file("a"), b = tmp.file("b");
      auto straight = final_weights(exp, a, false);
      // "Kill" run b after step 10: only the step-10 checkpoint of a survives in b.
      fs::create_directories(fs::path(b) / "checkpoints");
      fs::copy_file(fs::path(a) / "checkpoints" / "step-00000010.safetensors",
                    fs::path(b) / "checkpoints" / "step-00000010.safetensors");
      auto resumed = final_weights(exp, b, true);
      REQUIRE(straight.size() == resumed.size());
      for (size_t i = 0; i < straight.size(); ++i) {
        INFO(straight[i].first);
        CHECK(torch::equal(straight[i].second, resumed[i].second));
      }
      // The optimizer state matches too.
      auto fa =
          load_safetensors((fs::path(a) / "checkpoints" / "step-00000030.safetensors").string());
      auto fb =
          load_safetensors((fs::path(b) / "checkpoints" / "step-00000030.safetensors").string());
      REQUIRE(fa.tensors.size() == fb.tensors.size());
      for (size_t i = 0; i < fa.tensors.size(); ++i) {
        CHECK(torch::equal(fa.tensors[i].second, fb.tensors[i].second));
      }
      CHECK(fb.metadata.at("step") == "30");
    }
  }
}

TEST_CASE("integration: a run directory with checkpoints is not overwritten silently",
          "[integration][resume]") {
  test::TempDir tmp;
  test::write_text(tmp.file("exp.yaml"), kSmall);
  Experiment exp = Experiment::load(tmp.file("exp.yaml"), {"train.steps=10"});
  final_weights(exp, tmp.file("run"), false);
  CHECK_THROWS_WITH(final_weights(exp, tmp.file("run"), false),
                    Catch::Contains("already holds checkpoints") && Catch::Contains("--resume"));
}

TEST_CASE("integration: a diverging run stops with the step and keeps its checkpoint",
          "[integration][resume]") {
  test::TempDir tmp;
  test::write_text(tmp.file("exp.yaml"), kSmall);
  Experiment exp = Experiment::load(tmp.file("exp.yaml"), {"train.steps=40"});
  Transformer model = exp.build_model(torch::kCPU);
  Trainer trainer(exp.train, exp.seed, *exp.task, model, torch::kCPU, tmp.file("run"));
  for (int s = 0; s < 10; ++s) {
    trainer.step(trainer.batches_for_step(s), s);
  }
  trainer.save_checkpoint(10);
  {
    torch::NoGradGuard ng;
    model->named_parameters()["tok_emb.weight"].fill_(std::numeric_limits<float>::quiet_NaN());
  }
  CHECK_NOTHROW(trainer.check_finite());
  // The step reads nothing back from the device, so it does not stop by itself; the check
  // that run() makes before every log line, evaluation and checkpoint names the first bad step.
  for (int s = 10; s < 13; ++s) {
    trainer.step(trainer.batches_for_step(s), s);
  }
  CHECK_THROWS_WITH(
      trainer.check_finite(),
      Catch::Contains("training diverged: loss is") && Catch::Contains("nan at step 10"));
  CHECK(trainer.latest_checkpoint().find("step-00000010") != std::string::npos);
}

TEST_CASE("integration: a run that diverges between checks writes no checkpoint from it",
          "[integration][resume]") {
  test::TempDir tmp;
  test::write_text(tmp.file("exp.yaml"), kSmall);
  Experiment exp = Experiment::load(
      tmp.file("exp.yaml"), {"train.steps=20", "train.checkpoint_every=5", "train.log_every=20"});
  Transformer model = exp.build_model(torch::kCPU);
  Trainer trainer(exp.train, exp.seed, *exp.task, model, torch::kCPU, tmp.file("run"));
  // After step 7 the weights turn to NaN, so step index 7 is the first non-finite loss; the
  // next check comes with the checkpoint due after step 10, which must not be written.
  trainer.set_periodic(7, [&](int64_t step) {
    if (step == 7) {
      torch::NoGradGuard ng;
      model->named_parameters()["tok_emb.weight"].fill_(std::numeric_limits<float>::quiet_NaN());
    }
  });
  CHECK_THROWS_WITH(trainer.run(false), Catch::Contains("nan at step 7"));
  CHECK(trainer.latest_checkpoint().find("step-00000005") != std::string::npos);
}
