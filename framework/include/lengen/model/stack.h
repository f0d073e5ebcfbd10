#pragma once
// One stack of Transformer blocks, as an architecture declares it (Architecture::stacks).

#include "lengen/position/attention_kind.h"

#include <cstdint>
#include <string>

namespace lengen {

/// A stack of blocks: what the Transformer builds for it and how it is run. An architecture
/// lists its stacks in the order they run; the last one feeds the output head.
///
/// The Transformer creates the last stack's parameters first, then the output head's, then
/// the other stacks' in order, each of those with a norm over its output ("norm_<name>",
/// pre-norm models): the order every built-in architecture's weights have been drawn in, so
/// seeds keep their models. The position schemes number the distinct blocks of all stacks
/// in running order; attention maps come in the same order, each stack's self-attention maps
/// and then its cross-attention maps.
struct StackSpec {
  std::string name;  ///< module and parameter prefix: "blocks", "encoder"
  AttentionKind attention = AttentionKind::kCausalSelf;  ///< its blocks' self-attention
  bool cross = false;   ///< its blocks also cross-attend to an earlier stack's output
  bool source = false;  ///< it runs over the source (ModelInputs::source), not the tokens
  int64_t depth = 0;    ///< blocks a loop (model.layers, model.encoder_layers)
};

}  // namespace lengen
