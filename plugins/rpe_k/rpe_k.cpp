// RPE_k, Shaw et al. relative position representations (arXiv:1803.02155), as used by
// Jelassi et al. 2023 (HF `relative_key`):
//   score_ij = (q_i . k_j + q_i . w^K_{c(i,j)}) / sqrt(D),   c(i,j) = clip(p_i - p_j, -k, k)
//   z_i      = sum_j a_ij (v_j + w^V_{c(i,j)})               (value vectors optional)
// 2k+1 learned head-width vectors, shared by the heads, one table per layer (or shared). p is
// the sequence index or one level of the task's IDs. Hooks: relative logits (+ relative
// values). Limit: not defined for cross attention (queries and keys in different position
// spaces).
#include "lengen/plugin/plugin.h"
#include "lengen/position/scheme.h"

namespace {

class RpeK final : public lengen::SourcedPositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    lengen::ComponentSpec spec{
        "position", "rpe_k",
        "RPE_k: learned relative key (and value) vectors clipped at distance k (Shaw et al. 2018)",
        lengen::RelativeVectors::options()};
    auto source = lengen::PositionSource::options();
    spec.options.insert(spec.options.end(), source.begin(), source.end());
    return spec;
  }

  RpeK(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : SourcedPositionScheme(o, ctx), vectors_(*this, o, ctx) {}

  uint32_t hooks() const override {
    return lengen::kHookRelativeLogits | (vectors_.has_values() ? uint32_t{lengen::kHookRelativeValues} : 0u);
  }

  torch::Tensor relative_logits(const torch::Tensor& q,
                                const torch::Tensor& /*k*/,
                                const lengen::AttentionContext& ctx) override {
    return vectors_.query_term(q, ctx);  // [B, H, T, S]
  }

  torch::Tensor relative_values(const torch::Tensor& probs,
                                const lengen::AttentionContext& ctx) override {
    return vectors_.value_term(probs, ctx);  // [B, H, T, D]
  }

 private:
  lengen::RelativeVectors vectors_;
};

void register_rpe_k(lengen::Registrar& r) { r.add_position<RpeK>(); }

}  // namespace

LENGEN_PLUGIN("rpe_k", "0.1.0", register_rpe_k)
