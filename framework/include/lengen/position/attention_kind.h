#pragma once

// Which attention a position hook is called for.

namespace lengen {

/// Which attention a hook is being called for.
enum class AttentionKind { kCausalSelf, kBidirectionalSelf, kCross };

/// "causal_self", "bidirectional_self", "cross".
inline const char* attention_kind_name(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::kCausalSelf:
      return "causal_self";
    case AttentionKind::kBidirectionalSelf:
      return "bidirectional_self";
    case AttentionKind::kCross:
      return "cross";
  }
  return "?";
}

}  // namespace lengen
