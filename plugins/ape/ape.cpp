// Learned absolute position embedding (Vaswani et al. 2017, learned variant; GPT/BERT).
// x_t = tok_emb[token_t] + E[p_t], E in R^{(max_position+1) x C} learned.
// p_t is the sequence index (ids: index, the usual APE) or one level of the task's IDs
// (ids: task). Hooks: input embedding. Limit: positions above max_position cannot be embedded;
// the experiment refuses such evaluation cells before training.
#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/position/scheme.h"

namespace {

using lengen::OptionSpec;

class LearnedApe final : public lengen::PositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    return {"position",
            "ape",
            "learned absolute position embedding, E[p] added to the token embedding",
            {OptionSpec::integer("max_position", "largest position that can be embedded")
                 .with_default(512)
                 .at_least(1),
             OptionSpec::string("ids", "index: sequence index 0..T-1; task: the task's IDs")
                 .with_default("index")
                 .one_of({"index", "task"}),
             OptionSpec::integer("level", "which level of the task's IDs (ids: task)")
                 .with_default(0)
                 .at_least(0),
             OptionSpec::string("init", "table initialisation")
                 .with_default("normal")
                 .one_of({"normal", "sinusoidal"}),
             OptionSpec::number("init_std", "std of the normal initialisation")
                 .with_default(1.0)
                 .at_least(0),
             OptionSpec::number("init_scale", "scale of the sinusoidal initialisation")
                 .with_default(1.0)}};
  }

  LearnedApe(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : use_index_(o.get_string("ids") == "index"), level_(o.get_int("level")) {
    if (!use_index_ && level_ >= ctx.position_levels) {
      o.fail("level", fmt::format("the task emits {} level(s) of IDs; level {} does not exist",
                                  ctx.position_levels, level_));
    }
    tables_ = lengen::PositionTables(*this, {o.get_int("max_position")}, ctx.d_model,
                                     o.get_string("init"), o.get_float("init_std"),
                                     o.get_float("init_scale"));
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

  void check_ids(const torch::Tensor& ids) const override {
    tables_.check(const_cast<LearnedApe*>(this)->transform_ids(ids, 0, false));
  }

  torch::Tensor embed(const torch::Tensor& ids) override { return tables_.embed(ids); }

 private:
  bool use_index_;
  int64_t level_;
  lengen::PositionTables tables_;
};

void register_ape(lengen::Registrar& r) { r.add_position<LearnedApe>(); }

}  // namespace

LENGEN_PLUGIN("ape", "0.1.0", register_ape)
