#pragma once
// The addition task's tokens and its scratchpad format (Cho et al. 2025, section 4.3):
// `$ a_1 + ... + a_m = b_0 > b_1 > ... > b_m $` with bi-level coupled IDs (addition.cpp's
// header comment has the layout).
#include "lengen/core/rng.h"
#include "lengen/task/task.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lengen::tasks::addition {

/// Token IDs of "0".."9" (the vocabulary puts them at 2..11).
inline bool is_digit(int64_t tok) {
  return tok >= 2 && tok <= 11;
}

inline int64_t digit_id(char c) {
  return 2 + (c - '0');
}

/// Index hint h: a..z, A..Z, then <52>, <53>, ...
std::string hint_text(int64_t h);

/// The vocabulary: `>` only with the scratchpad and hints only when asked, so that the plain
/// task's vocabulary (and its checkpoints) stay as they were.
std::vector<std::string> vocabulary_tokens(bool scratchpad, int64_t hints);

/// `text` without its spaces.
std::string strip_spaces(const std::string& text);

/// The hint offset o of an example of operands `ops`, with `hints` index hints: uniform over
/// those where its answer's significances 1..A get hints o..o+A-1 < hints (no draw without
/// hints, so other formats' samples stay as they were).
int64_t hint_offset(int64_t hints, const std::vector<std::string>& ops, lengen::Rng& rng);

/// Length of the longest possible sum of m operands of at most `digits` digits:
/// len((10^digits - 1) * m).
size_t max_sum_length(size_t digits, size_t m);

/// The scratchpad format with the task's tokens and options.
struct ScratchpadFormat {
  int64_t bos, eos, plus, eq, arrow;  ///< token IDs
  int64_t start;                      ///< s: the ID of `+` and `=`, digits s + significance
  bool zero_pad, reverse, reverse_query, coupled;

  /// Bi-level causal IDs of a sequence whose prompt is its first `prompt_length` tokens
  /// (levels: significance, number group), written into `ids`.
  PositionIds causal_ids(const std::vector<int64_t>& tokens,
                         int64_t prompt_length,
                         PositionIds ids) const;

  /// The example of operands `ops` (their longest has `longest` digits; L: the answer's
  /// maximal length): every number padded to L digits with zero_pad (else its own length),
  /// operands reversed with reverse_query, b_i reversed with reverse.
  Example example(const std::vector<std::string>& ops, size_t longest, size_t L) const;
};

}  // namespace lengen::tasks::addition
