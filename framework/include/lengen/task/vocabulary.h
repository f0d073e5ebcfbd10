#pragma once

#include "lengen/core/export.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace lengen {

/// A task's tokens. Ids are indices into tokens(). Special tokens: pad (never predicted,
/// masked out), bos/eos (the same id when the task says so, as in Cho et al.).
class LENGEN_API Vocabulary {
 public:
  Vocabulary() = default;
  /// `tokens` must be unique; `pad`, `bos`, `eos` must be among them.
  Vocabulary(std::vector<std::string> tokens,
             const std::string& pad,
             const std::string& bos,
             const std::string& eos);

  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }

  const std::vector<std::string>& tokens() const { return tokens_; }

  const std::string& token(int64_t id) const;
  /// Id of a token; throws lengen::Error naming the token and the vocabulary.
  int64_t id(const std::string& token) const;

  bool contains(const std::string& token) const { return index_.count(token) > 0; }

  int64_t pad() const { return pad_; }

  int64_t bos() const { return bos_; }

  int64_t eos() const { return eos_; }

  /// Splits text into tokens by longest match; spaces are skipped. Throws on a character
  /// that starts no token, naming its column.
  std::vector<int64_t> encode(const std::string& text) const;
  /// Concatenates token strings.
  std::string decode(const std::vector<int64_t>& ids) const;

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> index_;
  int64_t pad_ = 0, bos_ = 0, eos_ = 0;
};

}  // namespace lengen
