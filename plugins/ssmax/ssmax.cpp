// Scalable-Softmax (SSMax; Nakanishi 2025, arXiv:2501.19399): each query's logits are scaled by
// s_h * log(n), n the number of keys the query attends to, so that the attention a query puts
// on its best-matching keys does not fade as n grows past the trained lengths (softmax's mass on
// one key falls like 1/n when the logits keep their size). s_h is one learned scalar per head,
// initialised to 1 / log(reference) so that a query with `reference` keys starts unscaled.
// Implemented as a q transform: softmax(s log(n) q.k) = softmax((s log(n) q).k).
// n: causal self-attention, the query's sequence index + 1 (`ids: index`, the default; packed
// rows give each token's index in its own sample); bidirectional and cross-attention, each
// sample's keys that are not padding. Hooks: q/k transform (keys are left alone).
#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/position/scheme.h"
#include "lengen/position/sourced_scheme.h"

#include <cmath>

namespace {

using lengen::AttentionKind;
using lengen::OptionSpec;

class Ssmax final : public lengen::SourcedPositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    lengen::ComponentSpec spec{
        "position",
        "ssmax",
        "Scalable-Softmax: scales each query's logits by s_h log(n), n the keys it attends to "
        "(Nakanishi 2025)",
        {OptionSpec::number("reference",
                            "key count at which the initial scale is 1 (s_h starts at "
                            "1 / log(reference))")
             .with_default(16.0)
             .at_least(2),
         OptionSpec::boolean("learn", "learn s_h (else it stays at its initial value)")
             .with_default(true)}};
    auto source = lengen::PositionSource::options();
    spec.options.insert(spec.options.end(), source.begin(), source.end());
    return spec;
  }

  Ssmax(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : SourcedPositionScheme(o, ctx) {
    auto init = torch::full({ctx.heads}, 1.0 / std::log(o.get_float("reference")));
    scale_ = o.get_bool("learn") ? register_parameter("scale", init)
                                 : register_buffer("scale", init);  // [H]
  }

  uint32_t hooks() const override { return lengen::kHookQKTransform; }

  bool supports(AttentionKind) const override { return true; }

  std::pair<torch::Tensor, torch::Tensor> transform_qk(
      const torch::Tensor& q,
      const torch::Tensor& k,
      const lengen::AttentionContext& ctx) override {
    torch::Tensor n;  // [B|1, 1, T|1, 1], the keys each query attends to
    if (ctx.kind == AttentionKind::kCausalSelf) {
      n = (ctx.query_ids[0] + 1).unsqueeze(1).unsqueeze(-1);  // [B|1, 1, T, 1]
    } else {
      auto real = torch::full({1}, ctx.key_length, torch::kInt64).to(q.device());  // [1]
      if (ctx.key_padding.defined())
        real = ctx.key_padding.logical_not().sum(-1);  // [B]
      n = real.view({-1, 1, 1, 1});
    }
    auto log_n = n.to(q.scalar_type()).clamp_min(1).log();    // [B|1, 1, T|1, 1]
    auto s = scale_.to(q.scalar_type()).view({1, -1, 1, 1});  // [1, H, 1, 1]
    return {q * (s * log_n), k};
  }

 private:
  torch::Tensor scale_;
};

void register_ssmax(lengen::Registrar& r) {
  r.add_position<Ssmax>();
}

}  // namespace

LENGEN_PLUGIN("ssmax", "0.1.0", register_ssmax)
