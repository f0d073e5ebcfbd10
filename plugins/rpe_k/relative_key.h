// The one implementation of RPE_k and RPE_{k,q} (their plugins, rpe_k.cpp and rpe_kq.cpp, only
// name it): learned relative vectors r_c, c(i,j) = clip(p_i - p_j, -k, k), 2k+1 head-width
// vectors shared by the heads, one table per layer (or shared), entering the logits as
//   RPE_k   (Shaw et al. 2018; HF `relative_key`):          q_i . r_c                 / sqrt(D)
//   RPE_kq  (Huang et al. 2020 method 4; `relative_key_query`): (q_i . r_c + k_j . r_c) / sqrt(D)
// with optional Shaw value vectors, z_i = sum_j a_ij (v_j + w^V_c). p is the sequence index or
// one level of the task's IDs. Hooks: relative logits (+ relative values). Not defined for
// cross attention (queries and keys in different position spaces).
#pragma once

#include "lengen/plugin/plugin.h"
#include "lengen/position/relative_vectors.h"
#include "lengen/position/scheme.h"
#include "lengen/position/sourced_scheme.h"

namespace lengen_rpe {

/// KeyTerm: whether the key side k_j . r_c joins the query side q_i . r_c.
template <bool KeyTerm>
class RelativeKey final : public lengen::SourcedPositionScheme {
 public:
  static lengen::ComponentSpec spec();  // defined by the plugin that registers the name

  RelativeKey(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : SourcedPositionScheme(o, ctx), vectors_(*this, o, ctx) {}

  /// The options both names share: the relative vectors' and the position source's.
  static std::vector<lengen::OptionSpec> options() {
    auto opts = lengen::RelativeVectors::options();
    auto source = lengen::PositionSource::options();
    opts.insert(opts.end(), source.begin(), source.end());
    return opts;
  }

  uint32_t hooks() const override {
    return lengen::kHookRelativeLogits |
           (vectors_.has_values() ? uint32_t{lengen::kHookRelativeValues} : 0u);
  }

  torch::Tensor relative_logits(const torch::Tensor& q,
                                const torch::Tensor& k,
                                const lengen::AttentionContext& ctx) override {
    if constexpr (KeyTerm) {
      return vectors_.query_term(q, ctx) + vectors_.key_term(k, ctx);  // [B, H, T, S]
    } else {
      return vectors_.query_term(q, ctx);  // [B, H, T, S]
    }
  }

  torch::Tensor relative_values(const torch::Tensor& probs,
                                const lengen::AttentionContext& ctx) override {
    return vectors_.value_term(probs, ctx);  // [B, H, T, D]
  }

 private:
  lengen::RelativeVectors vectors_;
};

}  // namespace lengen_rpe
