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

  // The encoder reads the task's source for the prompt and the decoder starts from the prompt's
  // last token (the start token) with its IDs: Task::to_seq2seq of the prompt with a
  // placeholder response (a source depends on the prompt alone; a paper's own format, e.g.
  // seq2seq_arithmetic's, drops BOS and the start token).
  ModelInputs prompt_inputs(const Task& task,
                            const std::vector<std::vector<int64_t>>& prompts) const override {
    const auto B = static_cast<int64_t>(prompts.size());
    const auto Tp = static_cast<int64_t>(prompts.front().size());
    const int64_t L = task.position_levels();
    const int64_t eos = task.vocabulary().eos();
    std::vector<Seq2SeqExample> pairs;
    for (const auto& prompt : prompts) {
      Example ex;
      ex.tokens = prompt;
      const int64_t R = std::max<int64_t>(1, task.max_response_length(prompt));
      ex.tokens.resize(static_cast<size_t>(Tp + R - 1), task.vocabulary().pad());
      ex.tokens.push_back(eos);
      ex.position_ids = task.causal_position_ids(ex.tokens, Tp);
      ex.loss_mask.assign(ex.tokens.size(), 0);
      ex.prompt_length = ex.answer_begin = Tp;
      pairs.push_back(task.to_seq2seq(ex));
      LENGEN_CHECK(pairs.back().source.size() == pairs.front().source.size(),
                   "greedy decoding: prompts of one length gave sources of different lengths");
    }
    const auto S = static_cast<int64_t>(pairs.front().source.size());
    auto source = torch::empty({B, S}, torch::kInt64);
    auto source_ids = torch::empty({L, B, S}, torch::kInt64);
    auto start = torch::empty({B, 1}, torch::kInt64);
    auto start_ids = torch::empty({L, B, 1}, torch::kInt64);
    for (int64_t b = 0; b < B; ++b) {
      const auto& pr = pairs[static_cast<size_t>(b)];
      for (int64_t t = 0; t < S; ++t) {
        source[b][t] = pr.source[static_cast<size_t>(t)];
        for (int64_t l = 0; l < L; ++l)
          source_ids[l][b][t] = pr.source_ids[static_cast<size_t>(l)][static_cast<size_t>(t)];
      }
      start[b][0] = pr.target.front();
      for (int64_t l = 0; l < L; ++l)
        start_ids[l][b][0] = pr.target_ids[static_cast<size_t>(l)].front();
    }
    ModelInputs in;
    in.source = source;
    in.source_ids = source_ids;
    in.tokens = start;   // [B, 1]
    in.ids = start_ids;  // [L, B, 1]
    return in;
  }
};

}  // namespace

void register_encoder_decoder(ArchitectureRegistry& r) {
  add_builtin<EncoderDecoder>(r);
}

}  // namespace lengen
