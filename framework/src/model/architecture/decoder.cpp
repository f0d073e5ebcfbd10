// decoder: one causal stack trained by next-token prediction on `BOS query = response EOS`.
#include "builtin.h"

namespace lengen {
namespace {

class Decoder final : public Architecture {
 public:
  static ComponentSpec spec() {
    return {"architecture",
            "decoder",
            "decoder-only: causal self-attention, next-token prediction",
            {}};
  }

  Decoder(const Options&, const ArchitectureContext&) {}

  const char* name() const override { return "decoder"; }

  std::vector<StackSpec> stacks(const ModelConfig& cfg) const override {
    return {{"blocks", AttentionKind::kCausalSelf, /*cross=*/false, /*source=*/false, cfg.layers}};
  }

  const char* objective() const override { return "next_token"; }

  bool one_sequence() const override { return true; }

  torch::Tensor forward(TransformerImpl& model,
                        const ModelInputs& in,
                        KVCache* cache,
                        std::vector<torch::Tensor>* attention) const override {
    return causal_stack(model, in, cache, attention, 0, nullptr, {});  // [B, T', V]
  }

  Batch make_batch(const Task& task, const std::vector<Example>& examples) const override {
    return lengen::make_batch(examples, task.vocabulary().pad());
  }
};

}  // namespace

void register_decoder(ArchitectureRegistry& r) {
  add_builtin<Decoder>(r);
}

}  // namespace lengen
