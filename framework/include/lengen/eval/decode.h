#pragma once
// Greedy decoding: what a model answers to a query, token by token with a KV cache for the
// autoregressive architectures (decoder, encoder_decoder), all output slots in one pass for
// the others (encoder). What the evaluator's decoded verdicts, self-labelling, `lengen decode`
// and Python's `decode` read. The architecture gives the first forward's inputs
// (Architecture::prompt_inputs) or the one-pass answer (Architecture::predict); the loop is
// here.

#include "lengen/core/export.h"
#include "lengen/model/transformer.h"
#include "lengen/task/task.h"

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace lengen {

/// Greedy decoding of the examples' queries (their responses are not read, except by one-pass
/// architectures for the slots the query fixes; see Task::to_labeled), prompts of one length
/// decoded as one batch. Returns the generated responses, EOS included when produced, in the
/// examples' order; ids_out receives the IDs fed for each sequence (prompt + response, as the
/// one-sequence layout).
LENGEN_API std::vector<std::vector<int64_t>> decode(Transformer& model,
                                                    const Task& task,
                                                    const std::vector<Example>& examples,
                                                    const torch::Device& device,
                                                    std::vector<PositionIds>* ids_out = nullptr);

/// Greedy KV-cached decoding of one prompt per row (all prompts the same length), for the
/// autoregressive architectures. New tokens' position IDs come from task.causal_position_ids
/// over the prompt and the generated prefix only. A sequence stops at EOS, at the task's
/// longest response, or where its next IDs are past what the model's schemes represent (a
/// wrong answer, not an error). Returns the generated responses (EOS included when produced);
/// `ids_out` receives the IDs fed for each sequence (prompt + response tokens fed back).
LENGEN_API std::vector<std::vector<int64_t>> greedy_decode(
    Transformer& model,
    const Task& task,
    const std::vector<std::vector<int64_t>>& prompts,
    const torch::Device& device,
    std::vector<PositionIds>* ids_out = nullptr);

}  // namespace lengen
