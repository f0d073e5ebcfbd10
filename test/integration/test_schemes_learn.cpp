// Every registered position scheme (in-tree and any on the plugin path) must let a small
// decoder learn in-distribution addition: 2-digit operands, 1000 steps. This is the "does it
// train at all" check behind the catalogue; length generalisation is measured by the
// experiments in docs/results.md, not here.
#include "helpers.h"

#include "lengen/eval/evaluator.h"
#include "lengen/experiment/experiment.h"
#include "lengen/plugin/loader.h"
#include "lengen/train/trainer.h"

using namespace lengen;

namespace {

const char* kRecipe = R"(name: learns
seed: 0
task: {name: addition, train_digits: [2, 2], eval_digits: [2, 2]}
model: {layers: 2, heads: 4, d_model: 64, d_ff: 128, norm: rmsnorm, activation: gelu}
train:
  steps: 1000
  batch_size: 64
  optimizer: {name: adam, lr: 0.003}
  schedule: {warmup_steps: 50, decay: cosine}
  log_every: 1000
  checkpoint_every: 0
eval: {samples: 200}
)";

// The scheme alone with its default options; tables sized to the task. Coupling trains with
// random offsets up to max_position, so a tight bound keeps its budget comparable.
std::string position_yaml(const PositionRegistry::Entry& e) {
  std::string y = "[{name: " + e.spec.name;
  for (const auto& o : e.spec.options) {
    if (o.key == "max_position") {
      y += e.spec.name == "coupling" ? ", max_position: 8" : ", max_position: 16";
    }
    if (o.key == "max_k") {
      y += ", max_k: 2";  // abacus: few offsets, as coupling's tight max_position
    }
  }
  return y + "}]";
}

}  // namespace

TEST_CASE("integration: every position scheme learns in-distribution addition",
          "[integration][position]") {
  load_all_plugins();
  test::TempDir dir;
  test::write_text(dir.file("learns.yaml"), kRecipe);
  for (const auto* entry : position_registry().list()) {
    // Two schemes restrict attention to what their paper's task lays out and are tested there
    // (test_abc_pipeline.cpp): `windowed` leaves each query its w neighbours by ID (a decoder
    // over sequential IDs would see one previous token), `abc` needs a calibration.
    if (entry->spec.name == "windowed" || entry->spec.name == "abc")
      continue;
    DYNAMIC_SECTION(entry->spec.name) {
      Experiment exp = Experiment::load(dir.file("learns.yaml"),
                                        {"output_dir=" + dir.str(),
                                         "name=" + entry->spec.name,
                                         "position=" + position_yaml(*entry)});
      Transformer model = exp.build_model(torch::kCPU);
      Trainer trainer(exp.train, exp.seed, *exp.task, model, torch::kCPU, exp.run_dir());
      TrainResult tr = trainer.run(false);
      auto results = evaluate_grid(model, *exp.task, exp.eval, torch::kCPU);
      REQUIRE(results.size() == 1);
      INFO(entry->spec.name << ": final loss " << tr.final_loss << ", exact match "
                            << results[0].accuracy);
      CHECK(results[0].accuracy >= 0.9);
    }
  }
}
