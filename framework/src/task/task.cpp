#include "lengen/task/task.h"

#include "lengen/core/error.h"
#include "lengen/registry/registry.h"

namespace lengen {

TaskRegistry& task_registry() {
  static TaskRegistry r("task", "tasks", "task");
  return r;
}

Vocabulary::Vocabulary(std::vector<std::string> tokens,
                       const std::string& pad,
                       const std::string& bos,
                       const std::string& eos)
    : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    LENGEN_CHECK(index_.emplace(tokens_[i], static_cast<int64_t>(i)).second,
                 "vocabulary: token '{}' appears twice",
                 tokens_[i]);
  }
  pad_ = id(pad);
  bos_ = id(bos);
  eos_ = id(eos);
}

const std::string& Vocabulary::token(int64_t id) const {
  LENGEN_CHECK(
      id >= 0 && id < size(), "token id {} is outside the vocabulary (size {})", id, size());
  return tokens_[static_cast<size_t>(id)];
}

int64_t Vocabulary::id(const std::string& token) const {
  auto it = index_.find(token);
  if (it == index_.end()) {
    throw Error(fmt::format("token '{}' is not in the vocabulary ({}){}",
                            token,
                            join(tokens_),
                            did_you_mean(token, tokens_)));
  }
  return it->second;
}

std::vector<int64_t> Vocabulary::encode(const std::string& text) const {
  std::vector<int64_t> out;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    size_t best_len = 0;
    int64_t best = -1;
    for (size_t t = 0; t < tokens_.size(); ++t) {
      const std::string& tok = tokens_[t];
      if (tok.size() > best_len && text.compare(i, tok.size(), tok) == 0) {
        best_len = tok.size();
        best = static_cast<int64_t>(t);
      }
    }
    if (best < 0) {
      throw Error(
          fmt::format("'{}': character '{}' at column {} is not a token of this task "
                      "(tokens: {})",
                      text,
                      text[i],
                      i + 1,
                      join(tokens_, " ")));
    }
    out.push_back(best);
    i += best_len;
  }
  return out;
}

std::string Vocabulary::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    out += token(id);
  }
  return out;
}

Task::~Task() = default;

bool Task::exact_match(const Example& ex, const std::vector<int64_t>& response) const {
  return response == ex.response();
}

std::string Task::render(const std::vector<int64_t>& tokens) const {
  return vocabulary().decode(tokens);
}

}  // namespace lengen

namespace lengen {

namespace {

PositionIds slice_ids(const PositionIds& ids, int64_t begin, int64_t end) {
  PositionIds out;
  for (const auto& level : ids) {
    out.emplace_back(level.begin() + begin, level.begin() + end);
  }
  return out;
}

}  // namespace

Seq2SeqExample Task::to_seq2seq(const Example& ex) const {
  const int64_t P = ex.prompt_length, T = ex.length();
  LENGEN_CHECK(P >= 1 && P < T, "to_seq2seq: prompt length {} outside [1, {})", P, T);
  Seq2SeqExample out;
  out.source.assign(ex.tokens.begin(), ex.tokens.begin() + P);
  out.source_ids = slice_ids(ex.position_ids, 0, P);
  out.target.assign(ex.tokens.begin() + (P - 1), ex.tokens.end());
  out.target_ids = slice_ids(ex.position_ids, P - 1, T);
  out.loss_mask.assign(ex.loss_mask.begin() + (P - 1), ex.loss_mask.end());
  out.loss_mask[0] = 0;  // the start token is given, never predicted
  return out;
}

LabeledExample Task::to_labeled(const Example& ex) const {
  const int64_t P = ex.prompt_length, T = ex.length();
  const std::vector<int64_t> prompt(ex.tokens.begin(), ex.tokens.begin() + P);
  const int64_t R = max_response_length(prompt);
  if (T - P != R) {
    throw Error(fmt::format(
        "the per-position (encoder) layout needs a response whose length the query fixes: the "
        "response of '{}' has {} tokens where the query allows {} (its output slots would "
        "reveal the answer's length); use a padded format (e.g. zero_pad: true)",
        render(ex.tokens),
        T - P,
        R));
  }
  const int64_t pad = vocabulary().pad();
  LabeledExample out;
  out.tokens = prompt;
  out.tokens.resize(static_cast<size_t>(T), pad);  // one slot per response token
  out.ids = ex.position_ids;
  out.labels.assign(static_cast<size_t>(P), pad);
  out.labels.insert(out.labels.end(), ex.tokens.begin() + P, ex.tokens.end());
  out.label_mask.assign(static_cast<size_t>(P), 0);
  out.label_mask.insert(out.label_mask.end(), ex.loss_mask.begin() + P, ex.loss_mask.end());
  out.slot_begin = P;
  return out;
}

std::vector<int64_t> Task::from_labeled(const LabeledExample& lx,
                                        const std::vector<int64_t>& predicted) const {
  LENGEN_CHECK(static_cast<int64_t>(predicted.size()) == lx.length(),
               "from_labeled: {} predictions for {} positions",
               predicted.size(),
               lx.length());
  return labeled_response({predicted.begin() + lx.slot_begin, predicted.end()}, vocabulary().pad());
}

std::vector<int64_t> labeled_response(const std::vector<int64_t>& predicted_slots, int64_t pad_id) {
  std::vector<int64_t> out = predicted_slots;
  while (!out.empty() && out.back() == pad_id) {
    out.pop_back();
  }
  return out;
}

}  // namespace lengen
