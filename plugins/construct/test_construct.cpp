// The `construct` stage: Theorem 4.1's hand-set model (Cho et al. 2025, App. D) solves
// multi-operand addition with scratchpad by greedy decoding, at lengths and operand counts no
// training ever saw, and its weights are what the appendix says they are.
#include "helpers.h"

#include "lengen/experiment/experiment.h"
#include "lengen/stage/run.h"
#include "lengen/stage/stage.h"

#include <nlohmann/json.hpp>

namespace {

using lengen::test::TempDir;

std::string experiment(const TempDir& dir, const std::string& extra = "") {
  return "name: theory\nseed: 0\ndtype: float64\noutput_dir: " + dir.str() +
         "\n"
         "task: {name: addition, scratchpad: true, zero_pad: true, pad_to: answer, operands: 2,\n"
         "       train_digits: [1, 3], eval_digits: [1, 40], eval_operands: [2, 30]}\n"
         "model: {arch: decoder, layers: 1, heads: 4, d_model: 51, d_head: 16, d_ff: 160, norm: "
         "none,\n"
         "        activation: relu, attention_bias: false, ff_bias: true}\n"
         "position: [{name: coupling, max_position: [100, 40]}]\n"
         "eval: {grid: {digits: [1, 6, 25], operands: [2, 8, 16]}, samples: 12, batch_size: 12,\n"
         "       greedy_decode: true}\n"
         "stages:\n"
         "  - {name: construct, kind: construct" +
         extra +
         "}\n"
         "  - {name: test, kind: eval, init_from: construct}\n";
}

nlohmann::json run(const TempDir& dir, const std::string& yaml) {
  lengen::test::write_text(dir.file("exp.yaml"), yaml);
  lengen::Experiment exp = lengen::Experiment::load(dir.file("exp.yaml"));
  lengen::run_experiment(exp, {});
  return nlohmann::json::parse(lengen::test::read_text(dir.file("theory/0/eval/summary.json")));
}

}  // namespace

TEST_CASE("construct: Theorem 4.1's model adds 2 to 16 operands of 1 to 25 digits, greedy",
          "[construct]") {
  TempDir dir;
  auto summary = run(dir, experiment(dir));
  REQUIRE(summary["cells"].size() == 9);
  for (const auto& c : summary["cells"]) {
    INFO(c.dump());
    CHECK(c["accuracy"].get<double>() == 1.0);
    CHECK(c["samples"].get<int64_t>() == 12);
  }
  // The layout is the appendix's: d = 19 + 2 P1 + 2 P2 with 2^P >= max_position + 1.
  auto layout = nlohmann::json::parse(
      lengen::test::read_text(dir.file("theory/0/stages/construct/construction.json")));
  CHECK(layout["P1"] == 7);
  CHECK(layout["P2"] == 6);
  CHECK(layout["d_model_needed"] == 19 + 2 * 7 + 2 * 6);
  CHECK(layout["d_head_needed"] == 14);

  // Weights as App. D sets them: hypercube codes in the coupling tables, 3 NUM into PRE_SUM.
  auto ckpt = lengen::load_safetensors(
      dir.file("theory/0/stages/construct/checkpoints/step-00000000.safetensors"));
  const torch::Tensor level0 = *ckpt.find("position.0.level0");
  CHECK(level0[0].abs().sum().item<double>() == 0.0);  // ID 0 (BOS) has no code
  const int64_t pos1 = layout["dims"]["POS_1"];
  // v_5^7: the bits of 4 are 0000100 -> + + + + - + +; its dot product with itself is 7 and
  // with v_6 (0000101) 5 = 7 - 2.
  auto v5 = level0[5].slice(0, pos1, pos1 + 7), v6 = level0[6].slice(0, pos1, pos1 + 7);
  CHECK(torch::equal(v5, torch::tensor({1., 1., 1., 1., -1., 1., 1.}, torch::kFloat64)));
  CHECK(v5.dot(v5).item<double>() == 7.0);
  CHECK(v5.dot(v6).item<double>() == 5.0);
  // POS_1_NEXT of row p is POS_1 of row p + 1.
  const int64_t pos1n = layout["dims"]["POS_1_NEXT"];
  CHECK(torch::equal(level0[5].slice(0, pos1n, pos1n + 7), v6));
}

TEST_CASE("construct: attention that is not sharp enough breaks it (the alphas matter)",
          "[construct]") {
  TempDir dir;
  auto summary = run(dir, experiment(dir, ", alpha: 1"));
  double worst = 1.0;
  for (const auto& c : summary["cells"])
    worst = std::min(worst, c["accuracy"].get<double>());
  CHECK(worst < 0.5);
}

TEST_CASE("construct: a model the construction cannot be set in is refused naming the key",
          "[construct]") {
  TempDir dir;
  std::string yaml = experiment(dir);
  auto refused = [&](const std::string& from, const std::string& to, const std::string& message) {
    std::string y = yaml;
    y.replace(y.find(from), from.size(), to);
    lengen::test::write_text(dir.file("exp.yaml"), y);
    lengen::Experiment exp = lengen::Experiment::load(dir.file("exp.yaml"));
    REQUIRE_THROWS_WITH(lengen::run_experiment(exp, lengen::RunOptions{false, true, false}),
                        Catch::Contains(message));
  };
  refused("norm: none", "norm: layernorm", "model.norm needs none");
  refused("d_model: 51", "d_model: 40", "model.d_model needs at least 45");
  refused("d_ff: 160", "d_ff: 100", "model.d_ff needs at least");
  refused("heads: 4", "heads: 2", "model.heads needs 4");
  // The tables are found by what indexes them: an APE over one level of the IDs is not enough,
  // and coupling over one level is refused the same way.
  const std::string tables =
      "position needs one scheme that adds only learned tables over both levels";
  refused("{name: coupling, max_position: [100, 40]}",
          "{name: ape, ids: task, level: 0, max_position: 100}",
          tables);
  refused("{name: coupling, max_position: [100, 40]}",
          "{name: coupling, levels: 1, max_position: 100}",
          tables);
}
