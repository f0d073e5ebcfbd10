// FIRE, functional interpolation for relative positions (Li et al. 2024, arXiv:2310.04418).
// b_h(i, j) = f(psi(i - j) / psi(max(L, i)))_h for j <= i, psi(x) = log(c x + 1), with a learned
// MLP f: R -> R^H (1 -> 32 -> 32 -> H, ReLU, no biases), learnable c > 0 (|c| is used) and
// threshold L = L_sqrt^2. The normalised distance lies in [0, 1] for any length, so the bias is
// finite and defined everywhere. One module per layer (`per_layer`, as in Cho et al.'s code) or
// shared. i, j are sequence indices or one level of the task's IDs (distance clamped at 0).
// Bidirectional attention (not in the paper; lengen's extension): the signed input
// sign(i - j) psi(|i - j|) / psi(max(L, i, j)) in [-1, 1], so keys after the query are told
// apart from keys before it and the bias stays finite for any length.
// Hooks: additive bias; the MLP runs once per distinct (normalising position, distance) pair.
// Limit: no meaning in cross attention.
#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/position/memo.h"
#include "lengen/position/scheme.h"
#include "lengen/position/sourced_scheme.h"

#include <cmath>

namespace {

using lengen::OptionSpec;

class Fire final : public lengen::SourcedPositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    lengen::ComponentSpec spec{
        "position",
        "fire",
        "FIRE: learned MLP over the log-normalised distance psi(i-j)/psi(max(L,i)) (Li et al. "
        "2024)",
        {OptionSpec::integer("hidden", "MLP width").with_default(32).at_least(1),
         OptionSpec::number("init_c", "initial c of psi(x) = log(c x + 1)")
             .with_default(0.1)
             .at_least(0),
         OptionSpec::number("init_threshold", "initial threshold L")
             .with_default(256.0)
             .at_least(0),
         OptionSpec::boolean("per_layer", "one FIRE module per layer instead of one shared")
             .with_default(true)}};
    auto source = lengen::PositionSource::options();
    spec.options.insert(spec.options.end(), source.begin(), source.end());
    return spec;
  }

  Fire(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : SourcedPositionScheme(o, ctx), per_layer_(o.get_bool("per_layer")) {
    const int64_t n = per_layer_ ? ctx.layers : 1, w = o.get_int("hidden");
    w1_ = register_parameter("w1", torch::randn({n, w, 1}));
    w2_ = register_parameter("w2", torch::randn({n, w, w}) / std::sqrt(static_cast<double>(w)));
    w3_ = register_parameter("w3",
                             torch::randn({n, ctx.heads, w}) / std::sqrt(static_cast<double>(w)));
    c_ = register_parameter("c", torch::full({n}, o.get_float("init_c")));
    l_sqrt_ = register_parameter("threshold_sqrt",
                                 torch::full({n}, std::sqrt(o.get_float("init_threshold"))));
  }

  uint32_t hooks() const override { return lengen::kHookAdditiveBias; }

  bool supports(lengen::AttentionKind kind) const override {
    return kind != lengen::AttentionKind::kCross;
  }

  torch::Tensor additive_bias(const lengen::AttentionContext& ctx) override {
    const int64_t l = per_layer_ ? ctx.layer : 0;
    // The MLP's input depends only on the integer pair (normalising position, signed
    // distance), so evaluate it once per distinct pair (at most T*S of them, shared by the
    // batch) and gather: the normalisation stays differentiable in c and L. The pairs depend
    // on positions only.
    const bool causal = ctx.kind == lengen::AttentionKind::kCausalSelf;
    const auto& pairs = pairs_.get(
        ctx,
        [&] {
          auto q = ctx.query_ids[0].clamp_min(0).unsqueeze(2);  // [B|1, T, 1]
          auto k = ctx.key_ids[0].clamp_min(0).unsqueeze(1);    // [B|1, 1, S]
          auto dist = q - k;                                    // [B|1, T, S]
          torch::Tensor norm_pos;
          if (causal) {
            dist = dist.clamp_min(0);
            norm_pos = q.expand_as(dist);
          } else {
            norm_pos = torch::maximum(q, k);
          }
          constexpr int64_t kShift = int64_t{1} << 32, kZero = int64_t{1} << 31;
          auto key = (norm_pos * kShift + dist + kZero).flatten();  // [B*T*S]
          auto [unique, inverse, counts] = at::_unique2(key,
                                                        /*sorted=*/false,
                                                        /*return_inverse=*/true,
                                                        /*return_counts=*/false);
          return std::vector<torch::Tensor>{
              at::div(unique, kShift, "floor"),       // [U] norm. position
              at::remainder(unique, kShift) - kZero,  // [U] signed distance
              inverse.view(dist.sizes())};            // [B|1, T, S]
        },
        causal ? 0 : 1);
    auto uq = pairs[0].to(w1_.dtype());
    auto ud = pairs[1].to(w1_.dtype());
    const auto& inverse = pairs[2];
    auto c = c_[l].abs();
    auto threshold = l_sqrt_[l] * l_sqrt_[l];
    auto psi = [&](const torch::Tensor& x) { return torch::log1p(c * x); };
    auto x = (ud.sign() * psi(ud.abs()) / (psi(torch::maximum(uq, threshold)) + 1e-6))
                 .unsqueeze(-1);                         // [U, 1]
    auto h = torch::relu(torch::matmul(x, w1_[l].t()));  // [U, W]
    h = torch::relu(torch::matmul(h, w2_[l].t()));       // [U, W]
    h = torch::matmul(h, w3_[l].t());                    // [U, H]
    auto sizes = inverse.sizes().vec();
    sizes.push_back(-1);
    return h.index_select(0, inverse.flatten())
        .view(sizes)
        .permute({0, 3, 1, 2});  // [B|1, H, T, S]
  }

 private:
  bool per_layer_;
  torch::Tensor w1_, w2_, w3_, c_, l_sqrt_;
  lengen::PositionMemo<std::vector<torch::Tensor>> pairs_;
};

void register_fire(lengen::Registrar& r) {
  r.add_position<Fire>();
}

}  // namespace

LENGEN_PLUGIN("fire", "0.1.0", register_fire)
