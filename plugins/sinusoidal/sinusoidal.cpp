// Sinusoidal absolute position encoding (Vaswani et al. 2017, arXiv:1706.03762).
// PE(p, 2i) = sin(p / 10000^{2i/C}), PE(p, 2i+1) = cos(p / 10000^{2i/C}); x_t = tok_emb +
// scale*PE(p_t). p_t is the sequence index (ids: index) or one level of the task's IDs (ids: task).
// Hooks: input embedding. No parameters; defined for any position.
#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/position/scheme.h"
#include "lengen/position/sourced_scheme.h"

#include <cmath>

namespace {

using lengen::OptionSpec;

class Sinusoidal final : public lengen::SourcedPositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    lengen::ComponentSpec spec{"position",
                               "sinusoidal",
                               "fixed sinusoidal absolute position encoding (Vaswani et al. 2017)",
                               lengen::PositionSource::options()};
    spec.options.push_back(
        OptionSpec::number("scale", "multiplier of the encoding").with_default(1.0));
    return spec;
  }

  Sinusoidal(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : SourcedPositionScheme(o, ctx), scale_(o.get_float("scale")), d_model_(ctx.d_model) {
    auto i = torch::arange((d_model_ + 1) / 2, torch::kFloat64);
    freq64_ = torch::exp(-std::log(10000.0) * 2.0 * i / static_cast<double>(d_model_));  // [C/2]
    // The buffer follows the model's device and dtype; the angles are always computed in
    // float64 (exact in a float64 model; rounded once, at the end, in a float32 one).
    freq_ = register_buffer("freq", freq64_.to(torch::kFloat32));  // [C/2]
  }

  uint32_t hooks() const override { return lengen::kHookInputEmbedding; }

  torch::Tensor embed(const torch::Tensor& ids) override {
    if (freq64_.device() != ids.device())
      freq64_ = freq64_.to(ids.device());  // once per device
    const auto& freq = freq64_;            // [C/2] float64
    auto angle =
        ids[0].to(torch::kFloat64).unsqueeze(-1) * freq;  // [B, T, 1] * [C/2] -> [B, T, C/2]
    auto pe = torch::stack({torch::sin(angle), torch::cos(angle)}, -1)  // [B, T, C/2, 2]
                  .flatten(-2)                                          // [B, T, C']
                  .slice(-1, 0, d_model_);                              // [B, T, C]
    return (pe * scale_).to(freq_.dtype());
  }

 private:
  double scale_;
  int64_t d_model_;
  torch::Tensor freq_, freq64_;
};

void register_sinusoidal(lengen::Registrar& r) {
  r.add_position<Sinusoidal>();
}

}  // namespace

LENGEN_PLUGIN("sinusoidal", "0.1.0", register_sinusoidal)
