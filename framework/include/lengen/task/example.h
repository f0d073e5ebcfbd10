#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace lengen {

/// Position IDs of a sequence: [L][T], one row per level.
using PositionIds = std::vector<std::vector<int64_t>>;

/// One sequence as the task lays it out: `BOS query = response EOS`.
///
///   tokens        [T]     token ids, BOS first
///   position_ids  [L][T]  the task's IDs at test-time start (1 for coupled IDs); training-time
///                         transforms (random offsets) are applied by the position scheme
///   loss_mask     [T]     1 where the token is a response token the model must predict
///                         (its prediction happens at index t-1)
///   prompt_length         tokens[0, prompt_length) is what the model is given at test time
///   answer_begin          first token of the final answer (after any scratchpad)
///   meta                  the grid coordinates and other facts, e.g. {"digits": 12}
struct Example {
  std::vector<int64_t> tokens;
  PositionIds position_ids;
  std::vector<uint8_t> loss_mask;
  int64_t prompt_length = 0;
  int64_t answer_begin = 0;
  std::map<std::string, int64_t> meta;

  int64_t length() const { return static_cast<int64_t>(tokens.size()); }

  /// Appends a token with its ID at each level (`ids` gives at least position_ids.size()
  /// values; extra values are ignored) and whether it is in the loss.
  void push(int64_t token, std::initializer_list<int64_t> ids, bool loss) {
    tokens.push_back(token);
    auto id = ids.begin();
    for (auto& level : position_ids) {
      level.push_back(*id++);
    }
    loss_mask.push_back(loss ? 1 : 0);
  }

  /// Response tokens (after the prompt), EOS included.
  std::vector<int64_t> response() const { return {tokens.begin() + prompt_length, tokens.end()}; }
};

/// An example as a (source, target) pair for an encoder-decoder.
///
///   source        [S]     what the encoder reads (the prompt, `BOS query =` by default)
///   source_ids    [L][S]
///   target        [U]     the decoder's sequence: a start token, then the response, EOS last
///   target_ids    [L][U]  in the same coordinates as source_ids, so coupled IDs stay aligned
///                         across cross-attention
///   loss_mask     [U]     1 where target[j] is predicted (at j-1); target[0] never is
struct Seq2SeqExample {
  std::vector<int64_t> source;
  PositionIds source_ids;
  std::vector<int64_t> target;
  PositionIds target_ids;
  std::vector<uint8_t> loss_mask;
};

/// An example as one input with a label per position for an encoder with a per-position
/// classifier.
///
///   tokens        [T]     the input (by default the prompt, then one slot token per response
///                         token)
///   ids           [L][T]
///   labels        [T]     the token each position must output (pad id where none)
///   label_mask    [T]     1 where a label is scored (loss and exact match)
///   slot_begin            the first output position; outputs are [slot_begin, T)
struct LabeledExample {
  std::vector<int64_t> tokens;
  PositionIds ids;
  std::vector<int64_t> labels;
  std::vector<uint8_t> label_mask;
  int64_t slot_begin = 0;

  int64_t length() const { return static_cast<int64_t>(tokens.size()); }
};

}  // namespace lengen
