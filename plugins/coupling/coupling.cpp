// Position Coupling (Cho et al. 2024, arXiv:2405.20671; multi-level: Cho et al. 2025,
// arXiv:2410.15787). A learned APE over the task's structured IDs: digits of equal significance
// share an ID. One table per level, summed: x_t = tok_emb[token_t] + sum_l E_l[p_l(t)].
// Training: per sample and level, every non-zero ID is shifted by
// delta_l ~ U[0, max_position_l - max ID_l] (random offsets); evaluation uses the task's IDs
// (start 1) unchanged. Hooks: input embedding. Limit: an evaluation sample whose IDs exceed
// max_position is refused with an error naming the level. Initialisation: sinusoidal by
// default (`init_base` sets its frequencies); the authors' code uses N(0, 1) (`init: normal`).
// At CPU scale the choice moves where length generalization stops (docs/results.md).
#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/position/scheme.h"
#include "lengen/position/tables.h"

namespace {

using lengen::OptionSpec;

class Coupling final : public lengen::PositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    lengen::ComponentSpec spec{
        "position",
        "coupling",
        "Position Coupling: learned tables over the task's coupled IDs, one per level, "
        "with random training offsets",
        {OptionSpec::integer("levels", "levels of IDs to embed (0: all the task emits)")
             .with_default(0)
             .at_least(0)
             .at_most(8),
         OptionSpec::int_list("max_position",
                              "largest ID per level (one value applies to every level)")
             .with_default(64)
             .at_least(1),
         OptionSpec::boolean("random_offset", "shift IDs randomly per sample in training")
             .with_default(true)}};
    auto init = lengen::PositionTables::init_options("sinusoidal");
    spec.options.insert(spec.options.end(), init.begin(), init.end());
    return spec;
  }

  Coupling(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : random_offset_(o.get_bool("random_offset")) {
    int64_t levels = o.get_int("levels");
    if (levels == 0) {
      levels = ctx.position_levels;
    }
    if (levels > ctx.position_levels) {
      o.fail(
          "levels",
          fmt::format(
              "the task emits {} level(s) of position IDs, not {}", ctx.position_levels, levels));
    }
    std::vector<int64_t> max_pos = o.get_int_list("max_position");
    if (max_pos.size() == 1) {
      max_pos.assign(static_cast<size_t>(levels), max_pos[0]);
    }
    if (static_cast<int64_t>(max_pos.size()) != levels) {
      o.fail("max_position", fmt::format("gives {} values for {} levels", max_pos.size(), levels));
    }
    tables_ = lengen::PositionTables(*this, max_pos, ctx.d_model, o);
  }

  uint32_t hooks() const override { return lengen::kHookInputEmbedding; }

  torch::Tensor transform_ids(const torch::Tensor& ids, int64_t, bool training) override {
    auto used = ids.slice(0, 0, tables_.levels());  // [L, B, T]
    return training && random_offset_ ? tables_.random_offsets(used, segments())
                                      : used;  // one delta per sample
  }

  std::pair<torch::Tensor, torch::Tensor> transform_ids_pair(const torch::Tensor& source,
                                                             const torch::Tensor& target,
                                                             bool training) override {
    if (training && random_offset_) {
      return tables_.random_offsets_pair(source, target);  // one delta per sample, both sides
    }
    return {source.slice(0, 0, tables_.levels()), target.slice(0, 0, tables_.levels())};
  }

  void check_ids(const torch::Tensor& ids) const override {
    tables_.check(ids.slice(0, 0, tables_.levels()));
  }

  torch::Tensor embed(const torch::Tensor& ids) override {
    // In evaluation an out-of-range ID would index past the table: say so instead.
    if (!is_training()) {
      tables_.check(ids);
    }
    return tables_.embed(ids);  // [B, T, C]
  }

  std::vector<lengen::LearnedPositionTable> learned_tables() const override {
    std::vector<lengen::LearnedPositionTable> out;
    for (int64_t l = 0; l < tables_.levels(); ++l) {
      out.push_back({tables_.weight(l), false, l});  // level l of the task's IDs
    }
    return out;
  }

 private:
  bool random_offset_;
  lengen::PositionTables tables_;
};

void register_coupling(lengen::Registrar& r) {
  r.add_position<Coupling>();
}

}  // namespace

LENGEN_PLUGIN("coupling", "0.1.0", register_coupling)
