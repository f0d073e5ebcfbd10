// encoder: one bidirectional stack with a key-padding mask and a per-position classifier over
// the output slots (Jelassi et al. 2023); decoding is one forward pass.
#include "builtin.h"

namespace lengen {
namespace {

class Encoder final : public Architecture {
 public:
  static ComponentSpec spec() {
    return {"architecture",
            "encoder",
            "encoder-only: bidirectional self-attention with a key-padding mask and a per-position "
            "classifier over the output slots (Jelassi et al. 2023)",
            {}};
  }

  Encoder(const Options&, const ArchitectureContext&) {}

  const char* name() const override { return "encoder"; }

  std::vector<StackSpec> stacks(const ModelConfig& cfg) const override {
    return {{"blocks",
             AttentionKind::kBidirectionalSelf,
             /*cross=*/false,
             /*source=*/false,
             cfg.layers}};
  }

  const char* objective() const override { return "per_position"; }

  bool one_pass() const override { return true; }

  // Every position sees every real position (padding is masked as keys); no incremental
  // decoding. With a loop count per sample (model.loops_per_length) or adaptive looping, the
  // stack runs sample by sample.
  torch::Tensor forward(TransformerImpl& model,
                        const ModelInputs& in,
                        KVCache* cache,
                        std::vector<torch::Tensor>* attention) const override {
    LENGEN_CHECK(cache == nullptr, "the '{}' architecture has no incremental decoding", name());
    const bool train = model.is_training();
    const auto& schemes = model.schemes();
    std::vector<torch::Tensor> ids(schemes.size());
    for (size_t i = 0; i < schemes.size(); ++i) {
      ids[i] = schemes[i]->position_ids(in.ids, 0, train);  // [L', B, T]
    }
    AttentionInputs self = model.attention_inputs(&ids, &ids);
    self.key_padding = in.padding;
    const ModelConfig& cfg = model.config();
    const bool adaptive = model.adaptive_loops() > 0 && !train;
    if (cfg.loops_per_length > 0 || adaptive) {
      LENGEN_CHECK(in.lengths.defined(),
                   "model.loops_per_length and adaptive looping need each sample's input length "
                   "(ModelInputs::lengths, set by the labeled batch)");
      LENGEN_CHECK(attention == nullptr,
                   "attention maps of a model whose loop count varies by sample are not "
                   "available; set model.loops_per_length: 0 and a fixed eval.loops to look at "
                   "them");
      torch::Tensor loops = cfg.loops_per_length > 0
                                ? cfg.sample_loops(in.lengths)
                                : torch::full_like(in.lengths, model.loops());  // [B]
      if (adaptive) {
        loops = loops + model.adaptive_loops();
      }
      return model.run_stack_per_sample(0,
                                        model.embed(in.tokens, ids),
                                        self,
                                        loops.cpu(),
                                        in.labelled,
                                        adaptive,
                                        in.outputs_from);
    }
    auto x = model.run_stack(
        0, model.embed(in.tokens, ids), self, {}, nullptr, attention, in.outputs_from);
    return model.head(x);  // [B, T - outputs_from, V]
  }

  Batch make_batch(const Task& task, const std::vector<Example>& examples) const override {
    std::vector<LabeledExample> labeled;
    labeled.reserve(examples.size());
    for (const auto& ex : examples) {
      labeled.push_back(task.to_labeled(ex));
    }
    return make_labeled_batch(labeled, task.vocabulary().pad());
  }

  // All slots at once: the argmax of one forward pass, read back as the response.
  std::vector<std::vector<int64_t>> predict(Transformer& model,
                                            const Task& task,
                                            const std::vector<Example>& examples,
                                            const torch::Device& device,
                                            std::vector<PositionIds>* ids_out) const override {
    torch::NoGradGuard no_grad;
    model->eval();
    std::vector<LabeledExample> labeled;
    for (const auto& ex : examples) {
      labeled.push_back(task.to_labeled(ex));
    }
    Batch b = make_labeled_batch(labeled, task.vocabulary().pad()).to(device);
    auto pred = model->forward(b.model_inputs()).argmax(-1).to(torch::kCPU);  // [B, T]
    auto acc = pred.accessor<int64_t, 2>();
    std::vector<std::vector<int64_t>> out;
    for (size_t i = 0; i < labeled.size(); ++i) {
      const auto& e = labeled[i];
      std::vector<int64_t> predicted;
      for (int64_t t = 0; t < e.length(); ++t) {
        predicted.push_back(acc[static_cast<int64_t>(i)][t]);
      }
      out.push_back(task.from_labeled(e, predicted));
    }
    if (ids_out) {
      ids_out->clear();
      for (const auto& e : labeled) {
        ids_out->push_back(e.ids);
      }
    }
    return out;
  }
};

}  // namespace

void register_encoder(ArchitectureRegistry& r) {
  add_builtin<Encoder>(r);
}

}  // namespace lengen
