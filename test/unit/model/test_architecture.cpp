// The architecture is a registered component (`model.arch`): a new one is one class and one
// registration, the framework takes it by name (config validation, the model's stacks,
// batches, loss, decoding) and names no architecture anywhere, and a broken or unknown one
// is refused with the reason.
#include "helpers.h"

#include "lengen/eval/decode.h"
#include "lengen/experiment/experiment.h"
#include "lengen/model/architecture.h"
#include "lengen/registry/registry.h"

#include <algorithm>

using namespace lengen;

namespace {

// A decoder under another name, written as a plugin would write it.
class RenamedDecoder final : public Architecture {
 public:
  static ComponentSpec spec() {
    return {"architecture", "test_renamed_decoder", "the decoder under another name (test)", {}};
  }

  RenamedDecoder(const Options&, const ArchitectureContext&) {}

  const char* name() const override { return "test_renamed_decoder"; }

  Stacks stacks() const override { return {/*encoder=*/false, /*decoder=*/true, /*cross=*/false}; }

  Layout layout() const override { return Layout::kSequence; }

  const char* objective() const override { return "next_token"; }

  Batch make_batch(const Task& task, const std::vector<Example>& examples) const override {
    return lengen::make_batch(examples, task.vocabulary().pad());
  }
};

// An architecture that declares no stack: refused when it is asked for.
class NoStack final : public Architecture {
 public:
  static ComponentSpec spec() {
    return {"architecture", "test_no_stack", "declares no stack (test)", {}};
  }

  NoStack(const Options&, const ArchitectureContext&) {}

  const char* name() const override { return "test_no_stack"; }

  Stacks stacks() const override { return {}; }

  Layout layout() const override { return Layout::kSequence; }

  const char* objective() const override { return "next_token"; }

  Batch make_batch(const Task& task, const std::vector<Example>& examples) const override {
    return lengen::make_batch(examples, task.vocabulary().pad());
  }
};

// Registered once per process; the contract tests, which iterate over the registry, then run
// it too.
void register_renamed_decoder() {
  static const bool once = [] {
    Registrar(PluginOrigin{"<test>", "test", "0"}).add_architecture<RenamedDecoder>();
    return true;
  }();
  (void)once;
}

ModelConfig tiny(const std::string& arch) {
  ModelConfig m;
  m.arch = arch;
  m.layers = 2;
  m.heads = 2;
  m.d_model = 16;
  m.d_ff = 24;
  return m;
}

Transformer build(const std::string& arch, const Task& task) {
  const ModelConfig cfg = tiny(arch);
  SchemeContext sc{
      cfg.d_model, cfg.heads, cfg.head_dim(), cfg.attention_layers(), task.position_levels(), ""};
  torch::manual_seed(3);
  std::vector<std::shared_ptr<PositionScheme>> schemes{
      test::make_scheme("{name: coupling, max_position: 32}", sc)};
  Transformer m(cfg, task.vocabulary().size(), schemes);
  m->to(torch::kFloat64);
  m->eval();  // no random offsets: both see the same IDs
  return m;
}

}  // namespace

TEST_CASE("architecture: a registered one is taken by name everywhere", "[arch]") {
  register_renamed_decoder();
  const auto names = architecture_registry().names();
  for (const char* n : {"decoder", "encoder", "encoder_decoder", "test_renamed_decoder"}) {
    CHECK(std::find(names.begin(), names.end(), n) != names.end());
  }
  auto task = test::make_task("{name: addition, position_ids: coupled}");
  Rng rng(1);
  std::vector<Example> exs;
  for (int d = 1; d <= 4; ++d)
    exs.push_back(task->sample_eval({{"digits", d}}, rng));

  // Same stacks, same parameters (same seed), same layout: the same function as the decoder.
  Transformer reference = build("decoder", *task);
  Transformer renamed = build("test_renamed_decoder", *task);
  REQUIRE(std::string(renamed->arch().name()) == "test_renamed_decoder");
  REQUIRE(renamed->named_parameters().size() == reference->named_parameters().size());
  const Batch batch = renamed->arch().make_batch(*task, exs);
  const auto a = renamed->arch().logits(renamed, batch);
  const auto b = reference->arch().logits(reference, batch);
  CHECK(test::max_abs_diff(a, b) == 0.0);
  CHECK(renamed->arch().loss(a, batch).item<double>() ==
        reference->arch().loss(b, batch).item<double>());
  CHECK(decode(renamed, *task, exs, torch::kCPU) == decode(reference, *task, exs, torch::kCPU));

  // An experiment file selects it by name; its depths follow its stacks.
  test::TempDir dir;
  test::write_text(dir.file("e.yaml"), R"(name: e
task: {name: addition}
model: {arch: test_renamed_decoder, layers: 3, heads: 2, d_model: 16, d_ff: 16}
position: [nope]
)");
  const Experiment e = Experiment::load(dir.file("e.yaml"));
  CHECK(e.model.arch == "test_renamed_decoder");
  CHECK(e.model.decoder_depth() == 3);
  CHECK(e.model.encoder_depth() == 0);
}

TEST_CASE("architecture: unknown and broken ones are refused with the reason", "[arch]") {
  register_renamed_decoder();
  test::TempDir dir;
  test::write_text(dir.file("x.yaml"), R"(name: x
task: {name: addition}
model: {arch: test_renamed_decodr}
position: [nope]
)");
  CHECK_THROWS_WITH(Experiment::load(dir.file("x.yaml")),
                    Catch::Contains("x.yaml") &&
                        Catch::Contains("unknown architecture 'test_renamed_decodr'") &&
                        Catch::Contains("did you mean 'test_renamed_decoder'"));

  // Registered for this check only: an architecture without a stack cannot be built.
  const std::string library = "<test: no stack>";
  Registrar(PluginOrigin{library, "test", "0"}).add_architecture<NoStack>();
  CHECK_THROWS_WITH(architecture("test_no_stack"), Catch::Contains("'test_no_stack' has no stack"));
  architecture_registry().remove_library(library);
  CHECK(architecture_registry().find("test_no_stack") == nullptr);
}

TEST_CASE(
    "architecture: label smoothing is cross-entropy against (1 - e) one-hot + e / V on the scored "
    "targets",
    "[arch]") {
  auto task = test::make_task("{name: addition}");
  Rng rng(3);
  std::vector<Example> exs;
  for (int d = 1; d <= 3; ++d)
    exs.push_back(task->sample_eval({{"digits", d}}, rng));
  Transformer model = build("decoder", *task);
  const auto& arch = model->arch();
  const Batch batch = arch.make_batch(*task, exs);
  const auto logits = arch.logits(model, batch).detach().to(torch::kFloat64);  // [B, T, V]

  // By hand: -(1 - e) log p(target) - e * mean over the vocabulary of log p, masked mean.
  auto by_hand = [&](const torch::Tensor& lg, double e) {
    const auto logp = torch::log_softmax(lg, -1);
    const auto target = logp.gather(-1, batch.targets.unsqueeze(-1)).squeeze(-1);
    const auto per_token = -(1 - e) * target - e * logp.mean(-1);
    const auto mask = batch.mask.to(torch::kFloat64);
    return ((per_token * mask).sum() / mask.sum()).item<double>();
  };
  for (double e : {0.0, 0.1, 0.3}) {
    CHECK(arch.loss(logits, batch, e).item<double>() == Approx(by_hand(logits, e)).epsilon(1e-12));
  }
  CHECK(arch.loss(logits, batch).item<double>() == Approx(by_hand(logits, 0.0)).epsilon(1e-12));

  // The property it is for: plain cross-entropy keeps falling as a right answer's margin grows,
  // the smoothed loss turns back up, so it stops rewarding ever larger margins.
  const auto right =
      torch::nn::functional::one_hot(batch.targets, logits.size(-1)).to(torch::kFloat64);
  CHECK(arch.loss(right * 40, batch, 0.0).item<double>() <
        arch.loss(right * 10, batch, 0.0).item<double>());
  CHECK(arch.loss(right * 40, batch, 0.1).item<double>() >
        arch.loss(right * 10, batch, 0.1).item<double>());
}
