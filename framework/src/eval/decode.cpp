// Greedy decoding (eval/decode.h): grouped by prompt length, KV-cached token by token.
#include "lengen/eval/decode.h"

#include "lengen/core/error.h"
#include "lengen/model/architecture.h"

#include <map>

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
  const Architecture& arch = model->arch();
  LENGEN_CHECK(!arch.one_pass(),
               "greedy_decode: the '{}' architecture decodes all output slots at once; use "
               "decode() with examples",
               arch.name());
  const int64_t B = static_cast<int64_t>(prompts.size());
  LENGEN_CHECK(B > 0, "greedy_decode: no prompts");
  const int64_t Tp = static_cast<int64_t>(prompts[0].size());
  for (const auto& p : prompts) {
    LENGEN_CHECK(static_cast<int64_t>(p.size()) == Tp,
                 "greedy_decode: prompts of one batch must have the same length");
  }
  const int64_t L = task.position_levels();
  const int64_t eos = task.vocabulary().eos();
  std::vector<PositionIds> fed(static_cast<size_t>(B));
  int64_t max_new = 0;
  for (int64_t b = 0; b < B; ++b) {
    fed[b] = task.causal_position_ids(prompts[b], Tp);
    max_new = std::max(max_new, task.max_response_length(prompts[b]));
  }
  KVCache cache;
  ModelInputs first = arch.prompt_inputs(task, prompts);
  for (torch::Tensor* t : {&first.tokens, &first.ids, &first.source, &first.source_ids}) {
    if (t->defined())
      *t = t->to(device);
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

std::vector<std::vector<int64_t>> decode(Transformer& model,
                                         const Task& task,
                                         const std::vector<Example>& examples,
                                         const torch::Device& device,
                                         std::vector<PositionIds>* ids_out) {
  if (model->arch().one_pass()) {
    return model->arch().predict(model, task, examples, device, ids_out);
  }
  std::map<size_t, std::vector<size_t>> by_len;
  for (size_t i = 0; i < examples.size(); ++i) {
    by_len[static_cast<size_t>(examples[i].prompt_length)].push_back(i);
  }
  std::vector<std::vector<int64_t>> out(examples.size());
  if (ids_out) {
    ids_out->assign(examples.size(), PositionIds());
  }
  for (const auto& [len, idx] : by_len) {
    std::vector<std::vector<int64_t>> group;
    for (size_t i : idx) {
      const auto& tokens = examples[i].tokens;
      group.emplace_back(tokens.begin(), tokens.begin() + examples[i].prompt_length);
    }
    std::vector<PositionIds> fed;
    auto responses = greedy_decode(model, task, group, device, ids_out ? &fed : nullptr);
    for (size_t j = 0; j < idx.size(); ++j) {
      out[idx[j]] = responses[j];
      if (ids_out) {
        (*ids_out)[idx[j]] = fed[j];
      }
    }
  }
  return out;
}

}  // namespace lengen
