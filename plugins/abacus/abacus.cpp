// Abacus embeddings (McLeish et al. 2024, arXiv:2405.17399): a learned embedding of each
// digit's significance within its own number, x_t = tok_emb[token_t] + E[a_t + k], with the
// task's abacus indices a_t (`position_ids: abacus`: 1 for a number's least significant digit,
// 2 for the next, ...; 0 for every other token, which is never shifted) and, in training, one
// offset k ~ U{0, ..., max_k} per batch added to every digit's index, as the authors' code
// draws it per forward pass (max_k 100 in the paper, which trains on 20 digits: the table then
// holds indices up to 120, and a test digit of any significance up to the table's size has
// a trained row). Evaluation uses k = 0. Hooks: input embedding. Limit: an index above
// max_position (evaluation), or above max_position - max_k (training), is refused.
#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/position/scheme.h"
#include "lengen/position/tables.h"

namespace {

using lengen::OptionSpec;

class Abacus final : public lengen::PositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    lengen::ComponentSpec spec{
        "position",
        "abacus",
        "Abacus: a learned table over each digit's significance in its own number (the task's "
        "abacus indices), shifted by one random k in [0, max_k] per training batch",
        {OptionSpec::integer("max_position",
                             "largest index the table holds (training: index + "
                             "max_k; test: the longest number's length)")
             .with_default(int64_t{256})
             .at_least(1),
         OptionSpec::integer("max_k", "largest training offset k (McLeish et al.: 100)")
             .with_default(int64_t{100})
             .at_least(0)}};
    auto init = lengen::PositionTables::init_options("normal");
    spec.options.insert(spec.options.end(), init.begin(), init.end());
    return spec;
  }

  Abacus(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : max_k_(o.get_int("max_k")), tables_(*this, {o.get_int("max_position")}, ctx.d_model, o) {
    if (max_k_ >= o.get_int("max_position")) {
      o.fail("max_k",
             fmt::format("an offset of up to {} leaves no room in a table of max_position {}; "
                         "raise max_position above max_k plus the longest trained number",
                         max_k_,
                         o.get_int("max_position")));
    }
  }

  uint32_t hooks() const override { return lengen::kHookInputEmbedding; }

  torch::Tensor transform_ids(const torch::Tensor& ids, int64_t, bool training) override {
    auto index = ids.slice(0, 0, 1);  // [1, B, T]
    if (!training || max_k_ == 0) {
      return index;
    }
    // Checked on the host (the Trainer checks batches there before a GPU sees them).
    if (index.device().is_cpu()) {
      const int64_t top = index.max().item<int64_t>();
      if (top + max_k_ > tables_.max_position()[0]) {
        throw lengen::Error(fmt::format(
            "abacus: a training number of {} digits with offsets up to max_k = {} needs "
            "max_position >= {}, got {}",
            top,
            max_k_,
            top + max_k_,
            tables_.max_position()[0]));
      }
    }
    // One k per batch (one forward pass), on the device: no host read.
    auto k = torch::randint(0, max_k_ + 1, {1}, index.options());  // [1]
    return index + k * (index != 0).to(torch::kInt64);             // [1, B, T]
  }

  void check_ids(const torch::Tensor& ids) const override { tables_.check(ids.slice(0, 0, 1)); }

  torch::Tensor embed(const torch::Tensor& ids) override {
    if (!is_training()) {
      tables_.check(ids);
    }
    return tables_.embed(ids);  // [B, T, C]
  }

 private:
  int64_t max_k_;
  lengen::PositionTables tables_;
};

void register_abacus(lengen::Registrar& r) {
  r.add_position<Abacus>();
}

}  // namespace

LENGEN_PLUGIN("abacus", "0.1.0", register_abacus)
