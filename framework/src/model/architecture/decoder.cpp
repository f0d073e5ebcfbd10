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

  Stacks stacks() const override { return {/*encoder=*/false, /*decoder=*/true, /*cross=*/false}; }

  Layout layout() const override { return Layout::kSequence; }

  const char* objective() const override { return "next_token"; }

  Batch make_batch(const Task& task, const std::vector<Example>& examples) const override {
    return lengen::make_batch(examples, task.vocabulary().pad());
  }
};

}  // namespace

void register_decoder(ArchitectureRegistry& r) {
  add_builtin<Decoder>(r);
}

}  // namespace lengen
