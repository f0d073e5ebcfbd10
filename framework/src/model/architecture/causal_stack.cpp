// A causal stack over the tokens with its KV cache: the wiring the decoder and
// encoder_decoder's decoder share (lengen/model/causal_stack.h).
#include "builtin.h"

namespace lengen {

torch::Tensor causal_stack(TransformerImpl& model,
                           const ModelInputs& in,
                           KVCache* cache,
                           std::vector<torch::Tensor>* attention,
                           size_t stack,
                           const CrossMemory* memory,
                           std::vector<torch::Tensor> ids) {
  const bool train = model.is_training();
  const auto& schemes = model.schemes();
  const size_t n = schemes.size();
  const int64_t offset = cache ? cache->length() : 0;
  // The new tokens' IDs as queries, every cached token's and theirs as keys.
  const torch::Tensor all_ids =
      (cache && cache->ids.defined()) ? torch::cat({cache->ids, in.ids}, 2) : in.ids;  // [L, B, S]
  std::vector<torch::Tensor> key_ids;
  if (ids.empty()) {
    ids.resize(n);
    key_ids.resize(n);
    for (size_t i = 0; i < n; ++i) {
      ids[i] = schemes[i]->position_ids(
          in.ids, offset, train, in.segments, in.sequence_index);  // [L', B, T]
      key_ids[i] =
          offset == 0 ? ids[i] : schemes[i]->position_ids(all_ids, 0, train);  // [L', B, S]
    }
  } else {
    key_ids = ids;
  }
  AttentionInputs self = model.attention_inputs(&ids, &key_ids);
  AttentionInputs cross = model.attention_inputs(&ids, memory ? &memory->ids : nullptr);
  if (in.segments.defined()) {
    // Block-diagonal: a position attends only within its own sample (the causal mask does the
    // rest).
    self.other_sample =
        (in.segments.unsqueeze(2) != in.segments.unsqueeze(1)).unsqueeze(1);  // [B, 1, T, T]
  }
  if (memory) {
    cross.key_padding = memory->padding;
    cross.memory = memory->output;
  }
  self.query_offset = cross.query_offset = offset;
  auto x = model.run_stack(
      stack, model.embed(in.tokens, ids), self, cross, cache, attention, in.outputs_from);
  if (cache) {
    cache->ids = all_ids;
  }
  return model.head(x);  // [B, T - outputs_from, V]
}

}  // namespace lengen
