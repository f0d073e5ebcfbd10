// FIRE, functional interpolation for relative positions (Li et al. 2024, arXiv:2310.04418).
// b_h(i, j) = f(psi(i - j) / psi(max(L, i)))_h for j <= i, psi(x) = log(c x + 1), with a learned
// MLP f: R -> R^H (1 -> 32 -> 32 -> H, ReLU, no biases), learnable c > 0 (|c| is used) and
// threshold L = L_sqrt^2. The normalised distance lies in [0, 1] for any length, so the bias is
// finite and defined everywhere. One module per layer (`per_layer`, as in Cho et al.'s code) or
// shared. i, j are sequence indices or one level of the task's IDs (distance clamped at 0).
// Hooks: additive bias. Limit: causal self-attention only.
#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/position/scheme.h"

#include <cmath>

namespace {

using lengen::OptionSpec;

class Fire final : public lengen::PositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    lengen::ComponentSpec spec{
        "position",
        "fire",
        "FIRE: learned MLP over the log-normalised distance psi(i-j)/psi(max(L,i)) (Li et al. 2024)",
        {OptionSpec::integer("hidden", "MLP width").with_default(32).at_least(1),
         OptionSpec::number("init_c", "initial c of psi(x) = log(c x + 1)").with_default(0.1).at_least(0),
         OptionSpec::number("init_threshold", "initial threshold L").with_default(256.0).at_least(0),
         OptionSpec::boolean("per_layer", "one FIRE module per layer instead of one shared")
             .with_default(true)}};
    auto source = lengen::PositionSource::options();
    spec.options.insert(spec.options.end(), source.begin(), source.end());
    return spec;
  }

  Fire(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : source_(o, ctx), per_layer_(o.get_bool("per_layer")) {
    const int64_t n = per_layer_ ? ctx.layers : 1, w = o.get_int("hidden");
    w1_ = register_parameter("w1", torch::randn({n, w, 1}));
    w2_ = register_parameter("w2", torch::randn({n, w, w}) / std::sqrt(static_cast<double>(w)));
    w3_ = register_parameter("w3", torch::randn({n, ctx.heads, w}) / std::sqrt(static_cast<double>(w)));
    c_ = register_parameter("c", torch::full({n}, o.get_float("init_c")));
    l_sqrt_ = register_parameter("threshold_sqrt", torch::full({n}, std::sqrt(o.get_float("init_threshold"))));
  }

  uint32_t hooks() const override { return lengen::kHookAdditiveBias; }

  bool supports(lengen::AttentionKind kind) const override {
    return kind == lengen::AttentionKind::kCausalSelf;
  }

  torch::Tensor transform_ids(const torch::Tensor& ids, int64_t offset, bool) override {
    return source_.select(ids, offset);  // [1, B, T]
  }

  torch::Tensor additive_bias(const lengen::AttentionContext& ctx) override {
    const int64_t l = per_layer_ ? ctx.layer : 0;
    auto q = ctx.query_ids[0].to(w1_.dtype());                           // [B, T]
    auto k = ctx.key_ids[0].to(w1_.dtype());                             // [B, S]
    auto dist = (q.unsqueeze(2) - k.unsqueeze(1)).clamp_min(0);          // [B, T, S]
    auto c = c_[l].abs();
    auto threshold = l_sqrt_[l] * l_sqrt_[l];
    auto psi = [&](const torch::Tensor& x) { return torch::log1p(c * x); };
    auto denom = psi(torch::maximum(q, threshold)).unsqueeze(2) + 1e-6;  // [B, T, 1]
    auto x = (psi(dist) / denom).unsqueeze(-1);                          // [B, T, S, 1]
    auto h = torch::relu(torch::matmul(x, w1_[l].t()));                  // [B, T, S, W]
    h = torch::relu(torch::matmul(h, w2_[l].t()));                       // [B, T, S, W]
    return torch::matmul(h, w3_[l].t()).permute({0, 3, 1, 2});           // [B, H, T, S]
  }

 private:
  lengen::PositionSource source_;
  bool per_layer_;
  torch::Tensor w1_, w2_, w3_, c_, l_sqrt_;
};

void register_fire(lengen::Registrar& r) { r.add_position<Fire>(); }

}  // namespace

LENGEN_PLUGIN("fire", "0.1.0", register_fire)
