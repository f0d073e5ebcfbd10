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

  // The encoder over the source, then the decoder over the target, cross-attending to it.
  std::vector<StackSpec> stacks(const ModelConfig& cfg) const override {
    return {{"encoder",
             AttentionKind::kBidirectionalSelf,
             /*cross=*/false,
             /*source=*/true,
             cfg.encoder_layers >= 0 ? cfg.encoder_layers : cfg.layers},
            {"blocks", AttentionKind::kCausalSelf, /*cross=*/true, /*source=*/false, cfg.layers}};
  }

  std::vector<std::string> own_keys() const override { return {"encoder_layers"}; }

  const char* objective() const override { return "seq2seq"; }

  // The encoder's output over the source (from the cache when it holds it), then the decoder.
  // Without a cache (one pass over whole pairs) both sides' IDs are drawn together, so that
  // random offsets are shared.
  torch::Tensor forward(TransformerImpl& model,
                        const ModelInputs& in,
                        KVCache* cache,
                        std::vector<torch::Tensor>* attention) const override {
    const bool train = model.is_training();
    const auto& schemes = model.schemes();
    const size_t n = schemes.size();
    CrossMemory memory;
    std::vector<torch::Tensor> target_ids;
    if (cache && cache->memory.defined()) {
      memory.output = cache->memory;
      memory.padding = cache->memory_padding;
      memory.ids = cache->memory_ids;
    } else {
      LENGEN_CHECK(in.source.defined() && in.source_ids.defined(),
                   "the '{}' architecture needs a source (ModelInputs::source)",
                   name());
      memory.ids.resize(n);
      if (cache == nullptr) {
        target_ids.resize(n);
      }
      for (size_t i = 0; i < n; ++i) {
        if (cache == nullptr) {
          std::tie(memory.ids[i], target_ids[i]) =
              schemes[i]->position_ids_pair(in.source_ids, in.ids, train);
        } else {
          memory.ids[i] = schemes[i]->position_ids(in.source_ids, 0, train);  // [L', B, S]
        }
      }
      AttentionInputs self = model.attention_inputs(&memory.ids, &memory.ids);
      self.key_padding = in.source_padding;
      memory.output = model.stack_output(
          0,
          model.run_stack(
              0, model.embed(in.source, memory.ids), self, {}, nullptr, attention));  // [B, S, C]
      memory.padding = in.source_padding;
      if (cache) {
        cache->memory = memory.output;
        cache->memory_padding = memory.padding;
        cache->memory_ids = memory.ids;
      }
    }
    return causal_stack(model, in, cache, attention, 1, &memory, std::move(target_ids));
  }

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
