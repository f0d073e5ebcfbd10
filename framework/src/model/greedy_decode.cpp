// Greedy KV-cached decoding for the autoregressive architectures (declared in architecture.h).
#include "lengen/core/error.h"
#include "lengen/model/architecture.h"

namespace lengen {

namespace {

// (last token's IDs) of a sequence, as [L] values.
std::vector<int64_t> last_ids(const Task& task,
                              const std::vector<int64_t>& tokens,
                              int64_t prompt_len) {
  PositionIds ids = task.causal_position_ids(tokens, prompt_len);
  std::vector<int64_t> out;
  for (const auto& level : ids) {
    out.push_back(level.back());
  }
  return out;
}

}  // namespace

std::vector<std::vector<int64_t>> greedy_decode(Transformer& model,
                                                const Task& task,
                                                const std::vector<std::vector<int64_t>>& prompts,
                                                const torch::Device& device,
                                                std::vector<PositionIds>* ids_out) {
  torch::NoGradGuard no_grad;
  model->eval();
  const Layout layout = model->arch().layout();
  LENGEN_CHECK(layout != Layout::kLabeled,
               "greedy_decode: the '{}' architecture decodes all output slots at once; use "
               "Architecture::decode with examples",
               model->arch().name());
  const bool seq2seq = layout == Layout::kSeq2Seq;
  const int64_t B = static_cast<int64_t>(prompts.size());
  LENGEN_CHECK(B > 0, "greedy_decode: no prompts");
  const int64_t Tp = static_cast<int64_t>(prompts[0].size());
  for (const auto& p : prompts) {
    LENGEN_CHECK(static_cast<int64_t>(p.size()) == Tp,
                 "greedy_decode: prompts of one batch must have the same length");
  }
  const int64_t L = task.position_levels();
  const int64_t eos = task.vocabulary().eos();
  auto tokens = torch::empty({B, Tp}, torch::kInt64);
  auto ids = torch::empty({L, B, Tp}, torch::kInt64);
  std::vector<PositionIds> fed(static_cast<size_t>(B));
  int64_t max_new = 0;
  for (int64_t b = 0; b < B; ++b) {
    PositionIds pid = task.causal_position_ids(prompts[b], Tp);
    for (int64_t t = 0; t < Tp; ++t) {
      tokens[b][t] = prompts[b][t];
      for (int64_t l = 0; l < L; ++l) {
        ids[l][b][t] = pid[l][t];
      }
    }
    fed[b] = pid;
    max_new = std::max(max_new, task.max_response_length(prompts[b]));
  }
  KVCache cache;
  ModelInputs first;
  if (seq2seq) {
    // The encoder reads the task's source for the prompt and the decoder starts from the
    // prompt's last token (the start token) with its IDs: Task::to_seq2seq of the prompt with a
    // placeholder response (a source depends on the prompt alone; a paper's own format, e.g.
    // seq2seq_arithmetic's, drops BOS and the start token).
    std::vector<Seq2SeqExample> pairs;
    for (int64_t b = 0; b < B; ++b) {
      Example ex;
      ex.tokens = prompts[b];
      const int64_t R = std::max<int64_t>(1, task.max_response_length(prompts[b]));
      ex.tokens.resize(static_cast<size_t>(Tp + R - 1), task.vocabulary().pad());
      ex.tokens.push_back(eos);
      ex.position_ids = task.causal_position_ids(ex.tokens, Tp);
      ex.loss_mask.assign(ex.tokens.size(), 0);
      ex.prompt_length = ex.answer_begin = Tp;
      pairs.push_back(task.to_seq2seq(ex));
      LENGEN_CHECK(pairs.back().source.size() == pairs.front().source.size(),
                   "greedy_decode: prompts of one length gave sources of different lengths");
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
    first.source = source.to(device);
    first.source_ids = source_ids.to(device);
    first.tokens = start.to(device);   // [B, 1]
    first.ids = start_ids.to(device);  // [L, B, 1]
  } else {
    first.tokens = tokens.to(device);
    first.ids = ids.to(device);
  }
  auto logits = model->forward(first, &cache);  // [B, T, V]
  // A model may write past what its position schemes represent (e.g. a scratchpad number that
  // never ends runs past coupling's max_position). That sequence is wrong, not an error: it
  // stops there and the rest of the batch goes on.
  auto representable = [&](const std::vector<int64_t>& li) {
    const auto t = torch::tensor(li, torch::kInt64).view({L, 1, 1});
    try {
      for (const auto& s : model->schemes())
        s->check_ids(t);
    } catch (const Error&) {
      return false;
    }
    return true;
  };
  std::vector<std::vector<int64_t>> seqs = prompts;
  std::vector<std::vector<int64_t>> responses(static_cast<size_t>(B));
  std::vector<bool> done(static_cast<size_t>(B), false);
  for (int64_t step = 0; step < max_new; ++step) {
    auto next = logits.select(1, logits.size(1) - 1).argmax(-1).to(torch::kCPU);  // [B]
    auto step_tokens = torch::empty({B, 1}, torch::kInt64);
    auto step_ids = torch::zeros({L, B, 1}, torch::kInt64);
    bool all_done = true;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t tok = next[b].item<int64_t>();
      if (!done[b]) {
        responses[b].push_back(tok);
        seqs[b].push_back(tok);
        done[b] = tok == eos ||
                  static_cast<int64_t>(responses[b].size()) >= task.max_response_length(prompts[b]);
      }
      step_tokens[b][0] = seqs[b].back();
      std::vector<int64_t> li = last_ids(task, seqs[b], Tp);
      if (!representable(li)) {
        done[b] = true;
        std::fill(li.begin(), li.end(), 0);  // a valid ID to feed; the row is not read again
      }
      all_done = all_done && done[b];
      for (int64_t l = 0; l < L; ++l) {
        step_ids[l][b][0] = li[l];
      }
      if (!done[b]) {
        for (int64_t l = 0; l < L; ++l) {
          fed[b][l].push_back(li[l]);
        }
      }
    }
    if (all_done) {
      break;
    }
    ModelInputs step_in;
    step_in.tokens = step_tokens.to(device);
    step_in.ids = step_ids.to(device);
    logits = model->forward(step_in, &cache);  // [B, 1, V]
  }
  if (ids_out) {
    *ids_out = fed;
  }
  return responses;
}

}  // namespace lengen
