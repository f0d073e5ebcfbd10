// RPE_{k,q}, Huang et al. 2020 method 4 (arXiv:2009.13658), as used by Jelassi et al. 2023
// (HF `relative_key_query`): one table of relative vectors enters through both the query and
// the key,
//   score_ij = (q_i . k_j + q_i . r_{c(i,j)} + k_j . r_{c(i,j)}) / sqrt(D),
//   c(i,j) = clip(p_i - p_j, -k, k),
// with 2k+1 learned head-width vectors shared by the heads, one table per layer (or shared);
// optional Shaw value vectors. p is the sequence index or one level of the task's IDs. Hooks:
// relative logits (+ relative values). Limit: not defined for cross attention.
#include "lengen/plugin/plugin.h"
#include "lengen/position/scheme.h"

namespace {

class RpeKQ final : public lengen::SourcedPositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    lengen::ComponentSpec spec{
        "position", "rpe_kq",
        "RPE_{k,q}: relative vectors in both the query and the key term (Huang et al. 2020)",
        lengen::RelativeVectors::options()};
    auto source = lengen::PositionSource::options();
    spec.options.insert(spec.options.end(), source.begin(), source.end());
    return spec;
  }

  RpeKQ(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : SourcedPositionScheme(o, ctx), vectors_(*this, o, ctx) {}

  uint32_t hooks() const override {
    return lengen::kHookRelativeLogits | (vectors_.has_values() ? uint32_t{lengen::kHookRelativeValues} : 0u);
  }

  torch::Tensor relative_logits(const torch::Tensor& q,
                                const torch::Tensor& k,
                                const lengen::AttentionContext& ctx) override {
    return vectors_.query_term(q, ctx) + vectors_.key_term(k, ctx);  // [B, H, T, S]
  }

  torch::Tensor relative_values(const torch::Tensor& probs,
                                const lengen::AttentionContext& ctx) override {
    return vectors_.value_term(probs, ctx);  // [B, H, T, D]
  }

 private:
  lengen::RelativeVectors vectors_;
};

void register_rpe_kq(lengen::Registrar& r) { r.add_position<RpeKQ>(); }

}  // namespace

LENGEN_PLUGIN("rpe_kq", "0.1.0", register_rpe_kq)
