// RoPE, rotary position embedding (Su et al. 2021, arXiv:2104.09864).
// theta_k = base^(-2k/d_r), k < d_r/2; q'_i = R(p_i) q_i, k'_j = R(p_j) k_j, so q'.k' depends only
// on p_i - p_j. Pairing "half" (GPT-NeoX / HF rotate_half: dims k and k + d_r/2) or
// "interleaved" (RoFormer: dims 2k and 2k+1). p is the sequence index or one level of the
// task's IDs (coupled IDs work). Hooks: q/k transform (keys are cached rotated). Limit: not
// defined for cross attention (queries and keys live in different position spaces).
#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/position/memo.h"
#include "lengen/position/scheme.h"
#include "lengen/position/sourced_scheme.h"

#include <cmath>

namespace {

using lengen::OptionSpec;

class Rope final : public lengen::SourcedPositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    lengen::ComponentSpec spec{
        "position",
        "rope",
        "rotary position embedding: rotates q and k by their positions (Su et al. 2021)",
        {OptionSpec::number("base", "frequency base").with_default(10000.0).at_least(1),
         OptionSpec::integer("dims", "rotated dimensions per head (even; 0 = all)")
             .with_default(0)
             .at_least(0),
         OptionSpec::string("pairing", "half: (k, k + d/2) as in GPT-NeoX; interleaved: (2k, 2k+1)")
             .with_default("half")
             .one_of({"half", "interleaved"})}};
    auto source = lengen::PositionSource::options();
    spec.options.insert(spec.options.end(), source.begin(), source.end());
    return spec;
  }

  Rope(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : SourcedPositionScheme(o, ctx),
        dims_(o.get_int("dims") == 0 ? ctx.head_dim : o.get_int("dims")),
        interleaved_(o.get_string("pairing") == "interleaved") {
    if (dims_ % 2 != 0 || dims_ > ctx.head_dim) {
      o.fail("dims",
             fmt::format(
                 "must be even and at most the head dimension {}, got {}", ctx.head_dim, dims_));
    }
    auto k = torch::arange(dims_ / 2, torch::kFloat64);
    inv_freq64_ = torch::pow(o.get_float("base"), -2.0 * k / static_cast<double>(dims_));  // [d/2]
    // The buffer follows the model's device; angles, cos and sin are computed in float64 and
    // rounded to the queries' dtype only when applied (exact in a float64 model).
    inv_freq_ = register_buffer("inv_freq", inv_freq64_.to(torch::kFloat32));  // [d/2]
  }

  uint32_t hooks() const override { return lengen::kHookQKTransform; }

  bool supports(lengen::AttentionKind kind) const override {
    return kind != lengen::AttentionKind::kCross;
  }

  std::pair<torch::Tensor, torch::Tensor> transform_qk(
      const torch::Tensor& q,
      const torch::Tensor& k,
      const lengen::AttentionContext& ctx) override {
    const int64_t T = q.size(2);
    // Angles depend on positions only: remembered across layers and steps.
    const auto& trig = trig_.get(ctx, [&] {
      auto q_pos = ctx.query_ids[0];                                  // [B|1, T]
      auto k_pos = ctx.key_ids[0].slice(1, ctx.key_ids.size(2) - T);  // [B|1, T] new keys
      // Copied to the device once: a copy from the host waits for the device.
      if (inv_freq64_.device() != inv_freq_.device())
        inv_freq64_ = inv_freq64_.to(inv_freq_.device());
      const auto& inv_freq = inv_freq64_;                                 // [d/2] float64
      auto q_angle = q_pos.to(torch::kFloat64).unsqueeze(-1) * inv_freq;  // [B|1, T, d/2]
      auto k_angle = k_pos.to(torch::kFloat64).unsqueeze(-1) * inv_freq;  // [B|1, T, d/2]
      return std::vector<torch::Tensor>{q_angle.cos().unsqueeze(1),
                                        q_angle.sin().unsqueeze(1),
                                        k_angle.cos().unsqueeze(1),
                                        k_angle.sin().unsqueeze(1)};
    });
    return {rotate(q, trig[0], trig[1]), rotate(k, trig[2], trig[3])};
  }

  /// x [B, H, T, D] rotated by the angles whose cos and sin are [B|1, 1, T, d/2].
  torch::Tensor rotate(const torch::Tensor& x,
                       const torch::Tensor& cos_in,
                       const torch::Tensor& sin_in) const {
    auto cos = cos_in.to(x.dtype());
    auto sin = sin_in.to(x.dtype());
    auto rot = x.slice(-1, 0, dims_);  // [B, H, T, d]
    torch::Tensor a, b;
    if (interleaved_) {
      auto pairs = rot.unflatten(-1, {dims_ / 2, 2});  // [B, H, T, d/2, 2]
      a = pairs.select(-1, 0);
      b = pairs.select(-1, 1);
    } else {
      a = rot.slice(-1, 0, dims_ / 2);      // [B, H, T, d/2]
      b = rot.slice(-1, dims_ / 2, dims_);  // [B, H, T, d/2]
    }
    auto ra = a * cos - b * sin;                                      // [B, H, T, d/2]
    auto rb = a * sin + b * cos;                                      // [B, H, T, d/2]
    auto out = interleaved_ ? torch::stack({ra, rb}, -1).flatten(-2)  // [B, H, T, d]
                            : torch::cat({ra, rb}, -1);               // [B, H, T, d]
    if (dims_ == x.size(-1)) {
      return out;
    }
    return torch::cat({out, x.slice(-1, dims_)}, -1);  // [B, H, T, D]
  }

 private:
  int64_t dims_;
  bool interleaved_;
  torch::Tensor inv_freq_, inv_freq64_;
  lengen::PositionMemo<std::vector<torch::Tensor>> trig_;
};

void register_rope(lengen::Registrar& r) {
  r.add_position<Rope>();
}

}  // namespace

LENGEN_PLUGIN("rope", "0.1.0", register_rope)
