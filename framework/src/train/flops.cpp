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
  const ArchitectureStacks arch = architecture(m.arch)->stacks();
  const double C = static_cast<double>(m.d_model);
  const double HD = static_cast<double>(m.heads * m.head_dim());
  const double F = static_cast<double>(m.d_ff);
  const double products =
      1.0 + static_cast<double>(make_activation(m.activation)->inputs());  // up (x inputs), down
  const double T = static_cast<double>(target);
  const double S = static_cast<double>(source);
  const double loops = static_cast<double>(std::max<int64_t>(1, applied > 0 ? applied : m.loops));
  const double causal_pairs = T * (T + 1) / 2;
  auto ff = [&](double tokens) { return 2.0 * products * C * F * tokens; };
  double flops = 0;
  if (arch.encoder && !arch.decoder) {  // encoder-only: one bidirectional stack over the input
    flops += loops * static_cast<double>(m.encoder_depth()) *
             (attention_flops(C, HD, T, T, T * T) + ff(T));
  } else if (arch.encoder) {  // encoder-decoder
    flops += loops * static_cast<double>(m.encoder_depth()) *
             (attention_flops(C, HD, S, S, S * S) + ff(S));
    flops +=
        loops * static_cast<double>(m.decoder_depth()) *
        (attention_flops(C, HD, T, T, causal_pairs) + attention_flops(C, HD, T, S, T * S) + ff(T));
  } else {  // decoder-only
    flops += loops * static_cast<double>(m.decoder_depth()) *
             (attention_flops(C, HD, T, T, causal_pairs) + ff(T));
  }
  return flops + 2.0 * C * static_cast<double>(vocab) * T;  // output head
}

}  // namespace lengen
