// KERPLE, logarithmic variant (Chi et al. 2022, arXiv:2205.09921), as an out-of-tree scheme.
// Additive attention bias per head h: b_h(i, j) = -r1_h * log(1 + r2_h * |p_i - p_j|), with
// learnable r1_h, r2_h > 0 (kept positive through softplus). p are the task's position IDs of
// one level (coupled IDs work too). Hooks: additive bias. Meaningless in cross attention.
#include "lengen/plugin/plugin.h"
#include "lengen/position/scheme.h"

#include <torch/torch.h>

namespace {

using lengen::OptionSpec;

class KerpleLog final : public lengen::PositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    return {"position",
            "kerple_log",
            "KERPLE log bias: -r1 log(1 + r2 |i - j|) per head (Chi et al. 2022)",
            {OptionSpec::integer("level", "which level of the task's IDs").with_default(0).at_least(0),
             OptionSpec::number("init_r1", "initial r1").with_default(1.0).at_least(0),
             OptionSpec::number("init_r2", "initial r2").with_default(1.0).at_least(0)}};
  }

  KerpleLog(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : level_(o.get_int("level")) {
    if (level_ >= ctx.position_levels) {
      o.fail("level", "the task does not emit that many levels of IDs");
    }
    // softplus^-1(x) = log(exp(x) - 1)
    auto inv = [](double x) { return std::log(std::expm1(x)); };
    r1_ = register_parameter("r1", torch::full({ctx.heads}, inv(o.get_float("init_r1"))));
    r2_ = register_parameter("r2", torch::full({ctx.heads}, inv(o.get_float("init_r2"))));
  }

  uint32_t hooks() const override { return lengen::kHookAdditiveBias; }

  torch::Tensor additive_bias(const lengen::AttentionContext& ctx) override {
    auto q = ctx.query_ids[level_].unsqueeze(2);                // [B, T, 1]
    auto k = ctx.key_ids[level_].unsqueeze(1);                  // [B, 1, S]
    auto dist = (q - k).abs().to(r1_.dtype()).unsqueeze(1);     // [B, 1, T, S]
    auto r1 = torch::softplus(r1_).view({1, -1, 1, 1});         // [1, H, 1, 1]
    auto r2 = torch::softplus(r2_).view({1, -1, 1, 1});         // [1, H, 1, 1]
    return -r1 * torch::log1p(r2 * dist);                       // [B, H, T, S]
  }

 private:
  int64_t level_;
  torch::Tensor r1_, r2_;
};

void register_kerple_log(lengen::Registrar& r) { r.add_position<KerpleLog>(); }

}  // namespace

LENGEN_PLUGIN("kerple_log", "0.1.0", register_kerple_log)
