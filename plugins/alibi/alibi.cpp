// ALiBi, attention with linear biases (Press et al. 2022, arXiv:2108.12409).
// bias_h(i, j) = -m_h |p_i - p_j| (for causal index positions this is the published -m_h (i - j)).
// Slopes: for n heads, n a power of two, m_h = 2^(-8h/n), h = 1..n; otherwise the slopes of the
// nearest lower power of two n', then every other slope of 2n', up to n. p is the sequence
// index or one level of the task's IDs. Hooks: additive bias, computed once per set of
// positions and shared by every layer and step. Limit: not defined for cross attention.
#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/position/memo.h"
#include "lengen/position/scheme.h"
#include "lengen/position/sourced_scheme.h"

#include <cmath>

namespace {

using lengen::OptionSpec;

std::vector<double> power_of_two_slopes(int64_t n) {
  std::vector<double> out;
  const double start = std::pow(2.0, -8.0 / static_cast<double>(n));
  for (int64_t h = 1; h <= n; ++h) {
    out.push_back(std::pow(start, static_cast<double>(h)));
  }
  return out;
}

class Alibi final : public lengen::SourcedPositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    lengen::ComponentSpec spec{
        "position",
        "alibi",
        "ALiBi: per-head linear distance penalty -m_h |i - j| on the logits (Press et al. 2022)",
        {OptionSpec::number("slope_scale", "multiplies every slope")
             .with_default(1.0)
             .at_least(0)}};
    auto source = lengen::PositionSource::options();
    spec.options.insert(spec.options.end(), source.begin(), source.end());
    return spec;
  }

  /// The published slope sequence for `heads` heads.
  static std::vector<double> slopes(int64_t heads) {
    int64_t p = 1;
    while (p * 2 <= heads) {
      p *= 2;
    }
    std::vector<double> out = power_of_two_slopes(p);
    std::vector<double> extra = power_of_two_slopes(2 * p);
    for (size_t i = 0; static_cast<int64_t>(out.size()) < heads; i += 2) {
      out.push_back(extra[i]);
    }
    return out;
  }

  Alibi(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : SourcedPositionScheme(o, ctx) {
    auto m = torch::tensor(slopes(ctx.heads), torch::kFloat64) * o.get_float("slope_scale");
    slopes_ = register_buffer("slopes", m.to(torch::kFloat32));  // [H]
  }

  uint32_t hooks() const override { return lengen::kHookAdditiveBias; }

  bool supports(lengen::AttentionKind kind) const override {
    return kind != lengen::AttentionKind::kCross;
  }

  torch::Tensor additive_bias(const lengen::AttentionContext& ctx) override {
    // Positions only: remembered across layers and steps while the positions stay the same.
    return bias_.get(ctx, [&] {
      auto q = ctx.query_ids[0].unsqueeze(2);                      // [B|1, T, 1]
      auto k = ctx.key_ids[0].unsqueeze(1);                        // [B|1, 1, S]
      auto dist = (q - k).abs().to(slopes_.dtype()).unsqueeze(1);  // [B|1, 1, T, S]
      return -slopes_.view({1, -1, 1, 1}) * dist;                  // [B|1, H, T, S]
    });
  }

 private:
  torch::Tensor slopes_;
  lengen::PositionMemo<> bias_;
};

void register_alibi(lengen::Registrar& r) {
  r.add_position<Alibi>();
}

}  // namespace

LENGEN_PLUGIN("alibi", "0.1.0", register_alibi)
