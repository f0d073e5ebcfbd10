#include "lengen/train/flops.h"

#include "lengen/model/architecture.h"

namespace lengen {
namespace {

// One attention sublayer: projections for `queries` query and `keys` key/value tokens, and
// `pairs` (query, key) products of width H x D for the scores and again for the values.
double attention_flops(double C, double HD, double queries, double keys, double pairs) {
  const double projections = 2.0 * C * HD * (queries /*q*/ + 2.0 * keys /*k, v*/ + queries /*out*/);
  return projections + 2.0 * 2.0 * HD * pairs;
}

}  // namespace

double forward_flops(
    const ModelConfig& m, int64_t vocab, int64_t target, int64_t source, int64_t applied) {
  const double C = static_cast<double>(m.d_model);
  const double HD = static_cast<double>(m.heads * m.head_dim());
  const double F = static_cast<double>(m.d_ff);
  const double products =
      1.0 + static_cast<double>(make_activation(m.activation)->inputs());  // up (x inputs), down
  const double T = static_cast<double>(target);
  const double S = static_cast<double>(source);
  const double loops = static_cast<double>(std::max<int64_t>(1, applied > 0 ? applied : m.loops));
  auto ff = [&](double tokens) { return 2.0 * products * C * F * tokens; };
  // Each stack: self-attention over its own tokens (causal: half the pairs), cross-attention
  // from them to the source, and the feed-forward.
  double flops = 0;
  for (const StackSpec& s : architecture(m.arch)->stacks(m)) {
    const double n = s.source ? S : T;
    const double pairs = s.attention == AttentionKind::kCausalSelf ? n * (n + 1) / 2 : n * n;
    double block = attention_flops(C, HD, n, n, pairs) + ff(n);
    if (s.cross) {
      block += attention_flops(C, HD, n, S, n * S);
    }
    flops += loops * static_cast<double>(s.depth) * block;
  }
  return flops + 2.0 * C * static_cast<double>(vocab) * T;  // output head
}

}  // namespace lengen
