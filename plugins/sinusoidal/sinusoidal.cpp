// Sinusoidal absolute position encoding (Vaswani et al. 2017, arXiv:1706.03762).
// PE(p, 2i) = sin(p / 10000^{2i/C}), PE(p, 2i+1) = cos(p / 10000^{2i/C}); x_t = tok_emb + scale*PE(p_t).
// p_t is the sequence index (ids: index) or one level of the task's IDs (ids: task).
// Hooks: input embedding. No parameters; defined for any position.
#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/position/scheme.h"

#include <cmath>

namespace {

using lengen::OptionSpec;

class Sinusoidal final : public lengen::PositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    return {"position",
            "sinusoidal",
            "fixed sinusoidal absolute position encoding (Vaswani et al. 2017)",
            {OptionSpec::string("ids", "index: sequence index 0..T-1; task: the task's IDs")
                 .with_default("index")
                 .one_of({"index", "task"}),
             OptionSpec::integer("level", "which level of the task's IDs (ids: task)")
                 .with_default(0)
                 .at_least(0),
             OptionSpec::number("scale", "multiplier of the encoding").with_default(1.0)}};
  }

  Sinusoidal(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : use_index_(o.get_string("ids") == "index"),
        level_(o.get_int("level")),
        scale_(o.get_float("scale")),
        d_model_(ctx.d_model) {
    if (!use_index_ && level_ >= ctx.position_levels) {
      o.fail("level", fmt::format("the task emits {} level(s) of IDs; level {} does not exist",
                                  ctx.position_levels, level_));
    }
    auto i = torch::arange((d_model_ + 1) / 2, torch::kFloat64);
    freq_ = register_buffer(
        "freq", torch::exp(-std::log(10000.0) * 2.0 * i / static_cast<double>(d_model_))
                    .to(torch::kFloat32));  // [C/2]
  }

  uint32_t hooks() const override { return lengen::kHookInputEmbedding; }

  torch::Tensor transform_ids(const torch::Tensor& ids, int64_t offset, bool) override {
    if (!use_index_) {
      return ids.slice(0, level_, level_ + 1);  // [1, B, T]
    }
    const int64_t B = ids.size(1), T = ids.size(2);
    auto idx = torch::arange(offset, offset + T, ids.options());  // [T]
    return idx.view({1, 1, T}).expand({1, B, T});                 // [1, B, T]
  }

  torch::Tensor embed(const torch::Tensor& ids) override {
    auto angle = ids[0].to(freq_.dtype()).unsqueeze(-1) * freq_;  // [B, T, 1] * [C/2] -> [B, T, C/2]
    auto pe = torch::stack({torch::sin(angle), torch::cos(angle)}, -1)  // [B, T, C/2, 2]
                  .flatten(-2)                                          // [B, T, C']
                  .slice(-1, 0, d_model_);                              // [B, T, C]
    return pe * scale_;
  }

 private:
  bool use_index_;
  int64_t level_;
  double scale_;
  int64_t d_model_;
  torch::Tensor freq_;
};

void register_sinusoidal(lengen::Registrar& r) { r.add_position<Sinusoidal>(); }

}  // namespace

LENGEN_PLUGIN("sinusoidal", "0.1.0", register_sinusoidal)
