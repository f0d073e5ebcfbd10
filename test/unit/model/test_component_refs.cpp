// Component references (OptionSpec::component): model.arch, model.norm, model.activation and
// train.schedule.decay take a registered name or {name: NAME, options...}, checked against
// the registry when the file is read, plugins on the search path included. The norm and the
// activation here are plugins in test_plugins/good/ (test/plugin/), found by convention.
#include "helpers.h"

#include "lengen/experiment/experiment.h"
#include "lengen/model/activation.h"
#include "lengen/model/norm.h"
#include "lengen/model/transformer.h"
#include "lengen/plugin/loader.h"
#include "lengen/registry/reference.h"
#include "lengen/train/schedule.h"

using namespace lengen;
using Catch::Contains;

namespace {

const char* kBase = R"(name: refs
task: {name: addition, train_digits: [1, 3], eval_digits: [1, 4]}
position: [nope]
)";

Experiment load(const test::TempDir& dir, const std::string& model, const std::string& more = "") {
  const std::string train = more.empty() ? "train: {steps: 10, batch_size: 4}\n" : more;
  test::write_text(dir.file("e.yaml"), std::string(kBase) + "model: " + model + "\n" + train);
  return Experiment::load(dir.file("e.yaml"));
}

void with_test_plugins() {
  static const bool once = [] {
    add_plugin_dir(std::string(LENGEN_BINARY_DIR) + "/test_plugins/good");
    return true;
  }();
  (void)once;
}

}  // namespace

TEST_CASE("component refs: a norm and an activation plugin, by name and with options",
          "[component_refs]") {
  with_test_plugins();
  test::TempDir dir;
  const Experiment e = load(dir,
                            "{layers: 1, heads: 2, d_model: 8, d_ff: 16, norm: {name: scalenorm, "
                            "g0: 2.0}, activation: squared_relu}");
  CHECK(norm_registry().find("scalenorm") != nullptr);
  CHECK(activation_registry().find("squared_relu") != nullptr);
  CHECK(e.model.activation == "squared_relu");

  // The norm is the plugin's, with g0 from the file: 2 x / ||x||.
  torch::manual_seed(0);
  const auto x = torch::randn({3, 8}, torch::kFloat64);
  Norm norm(e.model.norm, 8, 1e-5);
  norm->to(torch::kFloat64);
  CHECK(test::max_abs_diff(norm->forward(x), 2.0 * x / x.norm(2, -1, true)) < 1e-12);
  // The activation is relu(x)^2; with an option, relu(x)^3.
  CHECK(test::max_abs_diff(make_activation(e.model.activation)->forward(x),
                           torch::relu(x).pow(2)) == 0.0);
  const Experiment cubed = load(dir,
                                "{layers: 1, heads: 2, d_model: 8, d_ff: 16, activation: {name: "
                                "squared_relu, power: 3}}");
  CHECK(test::max_abs_diff(make_activation(cubed.model.activation)->forward(x),
                           torch::relu(x).pow(3)) == 0.0);

  // A model built from the file holds the plugin norm's parameter and runs.
  const auto names = [&] {
    SchemeContext sc{8, 2, 4, 1, e.task->position_levels(), ""};
    std::vector<std::shared_ptr<PositionScheme>> schemes{test::make_scheme("nope", sc)};
    Transformer m(e.model, e.task->vocabulary().size(), schemes);
    std::vector<std::string> out;
    for (const auto& p : m->named_parameters())
      out.push_back(p.key());
    return out;
  }();
  CHECK(std::find(names.begin(), names.end(), "blocks.0.norm_attn_pre.g") != names.end());

  // config.yaml keeps the reference as written.
  CHECK_THAT(e.resolved_yaml(), Contains("scalenorm") && Contains("g0: 2.0"));
}

TEST_CASE("component refs: bad references are refused where they are written", "[component_refs]") {
  with_test_plugins();
  test::TempDir dir;
  const std::string m = "{layers: 1, heads: 2, d_model: 8, d_ff: 16, ";
  CHECK_THROWS_WITH(load(dir, m + "norm: {name: scalenorm, g00: 2}}"),
                    Contains("e.yaml:") && Contains("unknown option 'g00' for norm 'scalenorm'") &&
                        Contains("did you mean 'g0'"));
  CHECK_THROWS_WITH(load(dir, m + "norm: {name: scalenorm, g0: -1}}"),
                    Contains("option 'g0' of norm 'scalenorm' must be >= 0"));
  CHECK_THROWS_WITH(load(dir, m + "norm: scalenrm}"),
                    Contains("unknown norm 'scalenrm'") && Contains("scalenorm"));
  CHECK_THROWS_WITH(
      load(dir, m + "activation: {power: 3}}"),
      Contains("model.activation: expected the name of a registered activation or a map"));
  CHECK_THROWS_WITH(
      load(dir, m + "activation: [relu]}"),
      Contains("model.activation: expected the name of a registered activation or a map"));
  CHECK_THROWS_WITH(load(dir, m + "arch: {name: decoder, depth: 2}}"),
                    Contains("unknown option 'depth' for architecture 'decoder'"));
  CHECK_THROWS_WITH(load(dir, m + "norm: rmsnorm}", "train: {schedule: {decay: cosinee}}\n"),
                    Contains("unknown decay 'cosinee'") && Contains("did you mean 'cosine'"));
}

TEST_CASE("component refs: a decay with options reaches the schedule", "[component_refs]") {
  test::TempDir dir;
  const Experiment e =
      load(dir,
           "{layers: 1, heads: 2, d_model: 8, d_ff: 16}",
           "train: {steps: 10, batch_size: 4, schedule: {decay: {name: cosine}}}\n");
  CHECK(e.train.decay == "{name: cosine}");
  const LearningRateSchedule s = e.train.schedule();
  CHECK(s.at(9) < s.at(0));
}

TEST_CASE("component refs: a reference is read and validated once, then built from that",
          "[component_refs]") {
  with_test_plugins();
  test::TempDir dir;
  const Experiment e = load(dir,
                            "{layers: 1, heads: 2, d_model: 8, d_ff: 16, norm: {name: scalenorm, "
                            "g0: 3.0}, activation: squared_relu}");
  // The check made when the file was read is what the model's norms are built from: the text
  // the configuration holds finds that reading, without parsing it again.
  const Reference& read = read_reference(norm_registry(), e.model.norm, "model.norm");
  CHECK(read.name == "scalenorm");
  CHECK(read.options.get_float("g0") == 3.0);
  CHECK(&read_reference(norm_registry(), e.model.norm, "model.norm") == &read);
  CHECK(&read_reference(norm_registry(), load_config_string(e.model.norm, "again")) == &read);
  // Stateless kinds are built once per reference and shared.
  CHECK(architecture(e.model.arch) == architecture(e.model.arch));
  CHECK(make_decay("cosine") == make_decay("cosine"));
  // A reading names its library; a name registered by another library is read again.
  CHECK(read.library.find("scalenorm") != std::string::npos);
  CHECK(read_reference(norm_registry(), "rmsnorm", "model.norm").library == "<builtin>");
  // A text that does not validate fails naming where it came from, every time.
  for (int i = 0; i < 2; ++i) {
    CHECK_THROWS_WITH(read_reference(norm_registry(), "{name: scalenorm, g1: 1}", "model.norm"),
                      Contains("model.norm") && Contains("g1"));
  }
}
