#include "lengen/task/task.h"

#include "lengen/core/error.h"

namespace lengen {

Vocabulary::Vocabulary(std::vector<std::string> tokens,
                       const std::string& pad,
                       const std::string& bos,
                       const std::string& eos)
    : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    LENGEN_CHECK(index_.emplace(tokens_[i], static_cast<int64_t>(i)).second,
                 "vocabulary: token '{}' appears twice", tokens_[i]);
  }
  pad_ = id(pad);
  bos_ = id(bos);
  eos_ = id(eos);
}

const std::string& Vocabulary::token(int64_t id) const {
  LENGEN_CHECK(id >= 0 && id < size(), "token id {} is outside the vocabulary (size {})", id,
               size());
  return tokens_[static_cast<size_t>(id)];
}

int64_t Vocabulary::id(const std::string& token) const {
  auto it = index_.find(token);
  if (it == index_.end()) {
    throw Error(fmt::format("token '{}' is not in the vocabulary ({}){}", token, join(tokens_),
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
      throw Error(fmt::format("'{}': character '{}' at column {} is not a token of this task "
                              "(tokens: {})",
                              text, text[i], i + 1, join(tokens_, " ")));
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
