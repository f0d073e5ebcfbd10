// encoder_decoder: a bidirectional encoder over the task's source (the query by default) and
// a causal decoder with cross-attention predicting the target token by token.
#include "builtin.h"

namespace lengen {
namespace {

class EncoderDecoder final : public Architecture {
 public:
  static ComponentSpec spec() {
    return {"architecture",
            "encoder_decoder",
            "encoder-decoder: bidirectional encoder over the query, causal decoder with "
            "cross-attention "
            "generating the response",
            {}};
  }

  EncoderDecoder(const Options&, const ArchitectureContext&) {}

  const char* name() const override { return "encoder_decoder"; }

  Stacks stacks() const override { return {/*encoder=*/true, /*decoder=*/true, /*cross=*/true}; }

  Layout layout() const override { return Layout::kSeq2Seq; }

  const char* objective() const override { return "seq2seq"; }

  Batch make_batch(const Task& task, const std::vector<Example>& examples) const override {
    std::vector<Seq2SeqExample> pairs;
    pairs.reserve(examples.size());
    for (const auto& ex : examples) {
      pairs.push_back(task.to_seq2seq(ex));
    }
    return make_seq2seq_batch(pairs, task.vocabulary().pad());
  }
};

}  // namespace

void register_encoder_decoder(ArchitectureRegistry& r) {
  add_builtin<EncoderDecoder>(r);
}

}  // namespace lengen
