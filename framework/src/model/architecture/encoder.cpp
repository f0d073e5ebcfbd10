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

  Stacks stacks() const override { return {/*encoder=*/true, /*decoder=*/false, /*cross=*/false}; }

  Layout layout() const override { return Layout::kLabeled; }

  const char* objective() const override { return "per_position"; }

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
