// The architecture is a registered component (`model.arch`): a new one is one class and one
// registration, the framework takes it by name (config validation, the model's stacks and
// their wiring, batches, loss, decoding) and names no architecture anywhere, and a broken or
// unknown one is refused with the reason.
#include "helpers.h"

#include "lengen/eval/decode.h"
#include "lengen/experiment/experiment.h"
#include "lengen/model/architecture.h"
#include "lengen/model/causal_stack.h"
#include "lengen/registry/registry.h"
#include "lengen/train/trainer.h"

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

  std::vector<StackSpec> stacks(const ModelConfig& cfg) const override {
    return {{"blocks", AttentionKind::kCausalSelf, false, false, cfg.layers}};
  }

  const char* objective() const override { return "next_token"; }

  bool one_sequence() const override { return true; }

  torch::Tensor forward(TransformerImpl& model,
                        const ModelInputs& in,
                        KVCache* cache,
                        std::vector<torch::Tensor>* attention) const override {
    return causal_stack(model, in, cache, attention, 0, nullptr, {});
  }

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

  std::vector<StackSpec> stacks(const ModelConfig&) const override { return {}; }

  const char* objective() const override { return "next_token"; }

  torch::Tensor forward(TransformerImpl&,
                        const ModelInputs&,
                        KVCache*,
                        std::vector<torch::Tensor>*) const override {
    throw Error("test_no_stack has no forward");
  }

  Batch make_batch(const Task& task, const std::vector<Example>& examples) const override {
    return lengen::make_batch(examples, task.vocabulary().pad());
  }
};

// An architecture with a wiring no built-in one has, in one class: two bidirectional stacks,
// "lower" then "blocks", the second reading the first's output (through a norm in pre-norm
// models). It lays out and decodes as the encoder does (one pass, one label per slot).
class TwoStage final : public Architecture {
 public:
  static ComponentSpec spec() {
    return {"architecture",
            "test_two_stage",
            "two bidirectional stacks, one after the other (test)",
            {}};
  }

  TwoStage(const Options&, const ArchitectureContext&) {}

  const char* name() const override { return "test_two_stage"; }

  std::vector<StackSpec> stacks(const ModelConfig& cfg) const override {
    return {{"lower", AttentionKind::kBidirectionalSelf, false, false, cfg.layers},
            {"blocks", AttentionKind::kBidirectionalSelf, false, false, cfg.layers}};
  }

  const char* objective() const override { return "per_position"; }

  bool one_pass() const override { return true; }

  torch::Tensor forward(TransformerImpl& model,
                        const ModelInputs& in,
                        KVCache* cache,
                        std::vector<torch::Tensor>* attention) const override {
    LENGEN_CHECK(cache == nullptr, "test_two_stage has no incremental decoding");
    std::vector<torch::Tensor> ids;
    for (const auto& scheme : model.schemes()) {
      ids.push_back(scheme->position_ids(in.ids, 0, model.is_training()));
    }
    AttentionInputs self = model.attention_inputs(&ids, &ids);
    self.key_padding = in.padding;
    auto x = model.embed(in.tokens, ids);
    x = model.stack_output(0, model.run_stack(0, x, self, {}, nullptr, attention));
    x = model.run_stack(1, x, self, {}, nullptr, attention, in.outputs_from);
    return model.head(x);
  }

  Batch make_batch(const Task& task, const std::vector<Example>& examples) const override {
    return architecture("encoder")->make_batch(task, examples);
  }

  std::vector<std::vector<int64_t>> predict(Transformer& model,
                                            const Task& task,
                                            const std::vector<Example>& examples,
                                            const torch::Device& device,
                                            std::vector<PositionIds>* ids_out) const override {
    return architecture("encoder")->predict(model, task, examples, device, ids_out);
  }
};

// Registered once per process, when the test binary loads: the contract tests, which iterate
// over the registry, run both too, whatever order the test cases run in.
void register_renamed_decoder() {
  static const bool once = [] {
    Registrar(PluginOrigin{"<test>", "test", "0"}).add_architecture<RenamedDecoder>();
    Registrar(PluginOrigin{"<test>", "test", "0"}).add_architecture<TwoStage>();
    return true;
  }();
  (void)once;
}

const bool registered_at_load = (register_renamed_decoder(), true);

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
  CHECK(e.model.attention_layers() == 3);
  CHECK(!e.model.to_yaml()["encoder_layers"]);  // encoder_decoder's key only
}

TEST_CASE("architecture: a new wiring is one class (test_two_stage)", "[arch]") {
  register_renamed_decoder();
  auto task = test::make_task("{name: addition, position_ids: coupled}");
  Rng rng(2);
  std::vector<Example> exs;
  for (int d = 1; d <= 4; ++d)
    exs.push_back(task->sample_eval({{"digits", d}}, rng));

  // Its stacks are built under their own names, numbered in running order for the schemes.
  Transformer two = build("test_two_stage", *task);
  const auto params = two->named_parameters();
  CHECK(params.contains("lower.0.attn.qkv.weight"));
  CHECK(params.contains("blocks.1.attn.qkv.weight"));
  CHECK(params.contains("norm_lower.weight"));  // pre-norm: a norm over the first stack's output
  CHECK(!params.contains("lower.2.attn.qkv.weight"));
  CHECK(tiny("test_two_stage").attention_layers() == 4);
  CHECK(two->attention_names() ==
        std::vector<std::string>{"lower.0", "lower.1", "blocks.0", "blocks.1"});

  // Post-norm (no norm between the stacks): the same function as a 4-layer encoder with the
  // same weights, lower.<l> as its blocks.<l> and blocks.<l> as its blocks.<l + 2>.
  ModelConfig post = tiny("test_two_stage");
  post.norm_position = "post";
  ModelConfig deep = post;
  deep.arch = "encoder";
  deep.layers = 4;
  SchemeContext sc{post.d_model,
                   post.heads,
                   post.head_dim(),
                   post.attention_layers(),
                   task->position_levels(),
                   ""};
  Transformer a(post,
                task->vocabulary().size(),
                std::vector<std::shared_ptr<PositionScheme>>{
                    test::make_scheme("{name: rpe_k, k: 8, per_layer: true}", sc)});
  Transformer b(deep,
                task->vocabulary().size(),
                std::vector<std::shared_ptr<PositionScheme>>{
                    test::make_scheme("{name: rpe_k, k: 8, per_layer: true}", sc)});
  {
    torch::NoGradGuard no_grad;
    auto to = b->named_parameters();
    for (const auto& p : a->named_parameters()) {
      std::string name = p.key();
      if (name.rfind("lower.", 0) == 0) {
        name = "blocks." + name.substr(6);
      } else if (name.rfind("blocks.", 0) == 0) {
        const auto dot = name.find('.', 7);
        name =
            "blocks." + std::to_string(std::stoi(name.substr(7, dot - 7)) + 2) + name.substr(dot);
      }
      REQUIRE(to.contains(name));
      to[name].copy_(p.value());
    }
    REQUIRE(a->named_parameters().size() == to.size());
  }
  a->to(torch::kFloat64);
  b->to(torch::kFloat64);
  a->eval();
  b->eval();
  const Batch batch = a->arch().make_batch(*task, exs);
  CHECK(test::max_abs_diff(a->arch().logits(a, batch), b->arch().logits(b, batch)) < 1e-12);
  CHECK(decode(a, *task, exs, torch::kCPU) == decode(b, *task, exs, torch::kCPU));

  // An experiment file selects it by name, and it trains.
  test::TempDir dir;
  test::write_text(dir.file("t.yaml"), R"(name: t
task: {name: addition, position_ids: coupled}
model: {arch: test_two_stage, layers: 1, heads: 2, d_model: 16, d_ff: 32}
position: [{name: coupling, max_position: 32}]
train: {steps: 60, batch_size: 16, optimizer: {name: adam, lr: 0.003}}
)");
  const Experiment e = Experiment::load(dir.file("t.yaml"), {"output_dir=" + dir.str()});
  CHECK(e.model.arch == "test_two_stage");
  Transformer model = e.build_model(torch::kCPU);
  CHECK(std::string(model->arch().name()) == "test_two_stage");
  const Batch probe = model->arch().make_batch(*e.task, exs);
  auto loss = [&] {
    torch::NoGradGuard no_grad;
    model->eval();
    return model->arch().loss(model->arch().logits(model, probe), probe).item<double>();
  };
  const double before = loss();
  Trainer trainer(e.train, e.seed, *e.task, model, torch::kCPU, e.run_dir());
  CHECK(trainer.run(false).steps == 60);
  CHECK(loss() < 0.8 * before);
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
  auto task = test::make_task("{name: addition}");
  CHECK_THROWS_WITH(Transformer(tiny("test_no_stack"),
                                task->vocabulary().size(),
                                std::vector<std::shared_ptr<PositionScheme>>{}),
                    Catch::Contains("'test_no_stack' declares no stack"));
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
