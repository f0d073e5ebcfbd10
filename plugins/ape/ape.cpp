// Learned absolute position embedding (Vaswani et al. 2017, learned variant; GPT/BERT).
// x_t = tok_emb[token_t] + E[p_t], E in R^{(max_position+1) x C} learned.
// p_t is the sequence index (ids: index, the usual APE) or one level of the task's IDs
// (ids: task). Hooks: input embedding. Limit: positions above max_position cannot be embedded;
// the experiment refuses such evaluation cells before training.
#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/position/scheme.h"
#include "lengen/position/sourced_scheme.h"
#include "lengen/position/tables.h"

namespace {

using lengen::OptionSpec;

class LearnedApe final : public lengen::SourcedPositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    lengen::ComponentSpec spec{
        "position",
        "ape",
        "learned absolute position embedding, E[p] added to the token embedding",
        {OptionSpec::integer("max_position", "largest position that can be embedded")
             .with_default(512)
             .at_least(0)}};
    for (const auto& extra :
         {lengen::PositionSource::options(), lengen::PositionTables::init_options("normal")}) {
      spec.options.insert(spec.options.end(), extra.begin(), extra.end());
    }
    return spec;
  }

  LearnedApe(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : SourcedPositionScheme(o, ctx),
        tables_(*this, {o.get_int("max_position")}, ctx.d_model, o) {}

  uint32_t hooks() const override { return lengen::kHookInputEmbedding; }

  void check_ids(const torch::Tensor& ids) const override { tables_.check(source_.select(ids, 0)); }

  torch::Tensor embed(const torch::Tensor& ids) override { return tables_.embed(ids); }

  std::vector<lengen::LearnedPositionTable> learned_tables() const override {
    return {source_.table(tables_.weight(0))};
  }

 private:
  lengen::PositionTables tables_;
};

void register_ape(lengen::Registrar& r) {
  r.add_position<LearnedApe>();
}

}  // namespace

LENGEN_PLUGIN("ape", "0.1.0", register_ape)
