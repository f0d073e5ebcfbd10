// Each position scheme is built once per model: the instance the load-time checks ran on is the
// first model's, with the parameters a fresh build draws; reading a file leaves torch's
// generator alone.
#include "helpers.h"

#include "lengen/experiment/experiment.h"

#include <torch/torch.h>

using namespace lengen;

namespace {

// A test-only scheme that counts its constructions: a learned table, so that its parameters
// come from the generator like those of ape or abacus.
int g_built = 0;

class CountedScheme final : public PositionScheme {
 public:
  CountedScheme(const Options&, const SchemeContext& ctx) {
    ++g_built;
    table_ = register_parameter("table", torch::randn({8, ctx.d_model}));
  }

  uint32_t hooks() const override { return kHookInputEmbedding; }

  torch::Tensor embed(const torch::Tensor& ids) override {
    return table_.index({ids[0].clamp_max(7)});  // [B|1, T, C]
  }

 private:
  torch::Tensor table_;
};

// Registers the scheme as if a library "test:counted" had, and removes it at scope exit.
struct CountedRegistration {
  CountedRegistration() {
    add_position_scheme(
        ComponentSpec{"position", "test_counted", "counts its constructions", {}},
        PluginOrigin{"test:counted", "test_counted", "test"},
        [](const Options& o, const SchemeContext& c) -> std::shared_ptr<PositionScheme> {
          return std::make_shared<CountedScheme>(o, c);
        });
  }

  ~CountedRegistration() { position_registry().remove_library("test:counted"); }
};

std::string experiment_file(const test::TempDir& dir) {
  const std::string text = std::string(test::kTinyAddition) + "output_dir: " + dir.str() + "\n";
  test::write_text(dir.file("exp.yaml"), text);
  return dir.file("exp.yaml");
}

bool same_parameters(Transformer& a, Transformer& b) {
  auto pa = a->named_parameters(), pb = b->named_parameters();
  if (pa.size() != pb.size())
    return false;
  for (const auto& item : pa) {
    if (!pb.contains(item.key()) || !torch::equal(item.value(), pb[item.key()]))
      return false;
  }
  return true;
}

}  // namespace

TEST_CASE("experiment: the schemes built when the file is read are the first model's",
          "[experiment]") {
  CountedRegistration registration;
  test::TempDir dir;
  const std::string path = experiment_file(dir);
  g_built = 0;
  const Experiment e = Experiment::load(path,
                                        {"position=[test_counted, {name: ape, "
                                         "max_position: 64}]"});
  CHECK(g_built == 1);  // built once, for the load-time checks
  Transformer first = e.build_model(torch::kCPU);
  CHECK(g_built == 1);  // ... and that instance is the first model's
  Transformer second = e.build_model(torch::kCPU);
  CHECK(g_built == 2);  // a second model has parameters of its own
  // Same seed: the taken schemes hold what a fresh build draws, and so does every other
  // parameter (the generator continues from where building them left it).
  CHECK(same_parameters(first, second));
  CHECK(first->schemes()[0].get() != second->schemes()[0].get());

  // A copy shares what was built: only one model takes it.
  const Experiment f = Experiment::load(path, {"position=[test_counted]"});
  const Experiment copy = f;
  g_built = 0;
  Transformer a = copy.build_model(torch::kCPU);
  Transformer b = f.build_model(torch::kCPU);
  CHECK(g_built == 1);
  CHECK(same_parameters(a, b));
}

TEST_CASE("experiment: a changed seed or context builds the schemes afresh", "[experiment]") {
  CountedRegistration registration;
  test::TempDir dir;
  const std::string path = experiment_file(dir);
  const std::vector<std::string> set{"position=[test_counted]"};
  Experiment e = Experiment::load(path, set);
  e.seed = 5;  // changed after reading: the schemes built for seed 0 are not this model's
  g_built = 0;
  Transformer changed = e.build_model(torch::kCPU);
  CHECK(g_built == 1);
  Transformer fresh = Experiment::load(path, {set[0], "seed=5"}).build_model(torch::kCPU);
  CHECK(same_parameters(changed, fresh));
  Transformer seed0 = Experiment::load(path, set).build_model(torch::kCPU);
  CHECK_FALSE(same_parameters(changed, seed0));

  Experiment moved = Experiment::load(path, set);
  moved.dir = dir.file("elsewhere");  // the scheme context names the run folder
  g_built = 0;
  (void)moved.build_model(torch::kCPU);
  CHECK(g_built == 1);
}

TEST_CASE("experiment: reading a file leaves torch's generator where it was", "[experiment]") {
  test::TempDir dir;
  const std::string path = experiment_file(dir);
  torch::manual_seed(1234);
  const auto expected = torch::rand({4});
  torch::manual_seed(1234);
  (void)Experiment::load(path, {"position=[{name: ape, max_position: 64}]"});
  CHECK(torch::equal(torch::rand({4}), expected));
}
