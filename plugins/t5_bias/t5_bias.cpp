// T5 relative attention bias (Raffel et al. 2020, arXiv:1910.10683; HF _relative_position_bucket).
// bias_h(i, j) = W[bucket(p_j - p_i), h]: exact buckets for distances below B/2, logarithmic
// buckets up to max_distance, one last bucket beyond. Causal attention uses unidirectional
// buckets (only j <= i distinguished), bidirectional attention splits the buckets by sign.
// W is shared by all layers (T5) or one per layer (`per_layer`). Hooks: additive bias; the
// buckets are computed once per set of positions. Limit: T5 adds no bias to cross attention.
#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/position/memo.h"
#include "lengen/position/scheme.h"
#include "lengen/position/sourced_scheme.h"

#include <cmath>

namespace {

using lengen::OptionSpec;

class T5Bias final : public lengen::SourcedPositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    lengen::ComponentSpec spec{
        "position",
        "t5_bias",
        "T5 relative bias: a learned scalar per head and log-bucketed distance (Raffel et al. "
        "2020)",
        {OptionSpec::integer("buckets", "number of buckets B").with_default(32).at_least(2),
         OptionSpec::integer("max_distance", "distances beyond share the last bucket")
             .with_default(128)
             .at_least(1),
         OptionSpec::boolean("per_layer", "one table per layer instead of one shared")
             .with_default(false),
         OptionSpec::number("init_std", "std of the table's initialisation (0: d_model^-1/2)")
             .with_default(0.0)
             .at_least(0)}};
    auto source = lengen::PositionSource::options();
    spec.options.insert(spec.options.end(), source.begin(), source.end());
    return spec;
  }

  T5Bias(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : SourcedPositionScheme(o, ctx),
        buckets_(o.get_int("buckets")),
        max_distance_(o.get_int("max_distance")),
        per_layer_(o.get_bool("per_layer")) {
    const double std = o.get_float("init_std") > 0
                           ? o.get_float("init_std")
                           : 1.0 / std::sqrt(static_cast<double>(ctx.d_model));
    const int64_t tables = per_layer_ ? ctx.layers : 1;
    weight_ = register_parameter("weight", torch::randn({tables, buckets_, ctx.heads}) * std);
  }

  uint32_t hooks() const override { return lengen::kHookAdditiveBias; }

  bool supports(lengen::AttentionKind kind) const override {
    return kind != lengen::AttentionKind::kCross;
  }

  torch::Tensor additive_bias(const lengen::AttentionContext& ctx) override {
    const bool bidirectional = ctx.kind != lengen::AttentionKind::kCausalSelf;
    const auto& buckets = bucket_memo_.get(
        ctx,
        [&] {
          auto rel = ctx.key_ids[0].unsqueeze(1) - ctx.query_ids[0].unsqueeze(2);  // [B|1, T, S]
          return bucket(rel, bidirectional);                                       // [B|1, T, S]
        },
        bidirectional ? 1 : 0);
    auto table = weight_[per_layer_ ? ctx.layer : 0];  // [Bk, H]
    return torch::embedding(table, buckets)            // [B|1, T, S, H]
        .permute({0, 3, 1, 2});                        // [B|1, H, T, S]
  }

  /// The published bucket function (HF `_relative_position_bucket`), rel = key - query.
  torch::Tensor bucket(const torch::Tensor& rel, bool bidirectional) const {
    int64_t nb = buckets_;
    torch::Tensor ret = torch::zeros_like(rel);
    torch::Tensor n;
    if (bidirectional) {
      nb /= 2;
      ret = ret + (rel > 0).to(torch::kInt64) * nb;
      n = rel.abs();
    } else {
      n = (-rel).clamp_min(0);
    }
    const int64_t exact = nb / 2;
    auto nf = n.to(torch::kFloat64).clamp_min(1.0);
    auto large =
        exact + (torch::log(nf / exact) / std::log(static_cast<double>(max_distance_) / exact) *
                 static_cast<double>(nb - exact))
                    .floor()
                    .to(torch::kInt64);
    large = large.clamp_max(nb - 1);
    return ret + torch::where(n < exact, n, large);
  }

 private:
  int64_t buckets_, max_distance_;
  bool per_layer_;
  torch::Tensor weight_;
  lengen::PositionMemo<> bucket_memo_;
};

void register_t5_bias(lengen::Registrar& r) {
  r.add_position<T5Bias>();
}

}  // namespace

LENGEN_PLUGIN("t5_bias", "0.1.0", register_t5_bias)
