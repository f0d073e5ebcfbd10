// RPE_{k,q} (Huang et al. 2020, method 4): the logit term is (q_i + k_j) . r_{clip(p_i - p_j, k)}
// / sqrt(D), one table shared by the query and the key terms.
#include "helpers.h"

using lengen::test::make_scheme;
using lengen::test::max_abs_diff;

TEST_CASE("rpe_kq: query and key terms share one clipped table", "[rpe]") {
  auto s = make_scheme("{name: rpe_kq, k: 2}", lengen::SchemeContext{16, 3, 4, 1, 1, ""});
  s->to(torch::kFloat64);
  auto table = s->named_parameters()["key_vectors"][0];  // [2k+1, D]
  REQUIRE(table.sizes() == torch::IntArrayRef({5, 4}));
  torch::NoGradGuard ng;
  const int64_t T = 7;
  lengen::AttentionContext a;
  a.query_ids = torch::arange(T).view({1, 1, T});
  a.key_ids = a.query_ids;
  auto q = torch::randn({2, 3, T, 4}, torch::kFloat64);
  auto k = torch::randn({2, 3, T, 4}, torch::kFloat64);
  auto r = s->relative_logits(q, k, a);  // [B, H, T, T]
  REQUIRE(r.sizes() == torch::IntArrayRef({2, 3, T, T}));
  for (int64_t i = 0; i < T; ++i) {
    for (int64_t j = 0; j < T; ++j) {
      const int64_t c = std::max<int64_t>(-2, std::min<int64_t>(2, i - j)) + 2;
      auto qi = q.select(2, i), kj = k.select(2, j);       // [B, H, D]
      auto expect = ((qi + kj) * table[c]).sum(-1) / 2.0;  // sqrt(D) = 2
      CHECK(max_abs_diff(r.select(2, i).select(2, j), expect) < 1e-12);
    }
  }
  // With zero queries only the key term is left, and it is RPE_k's missing half.
  auto key_only = s->relative_logits(torch::zeros_like(q), k, a);
  CHECK(key_only.abs().max().item<double>() > 1e-6);
  auto rpe_k = make_scheme("{name: rpe_k, k: 2}", lengen::SchemeContext{16, 3, 4, 1, 1, ""});
  rpe_k->to(torch::kFloat64);
  rpe_k->named_parameters()["key_vectors"].copy_(s->named_parameters()["key_vectors"]);
  CHECK(max_abs_diff(r - key_only, rpe_k->relative_logits(q, k, a)) < 1e-12);
  CHECK(!s->supports(lengen::AttentionKind::kCross));
}
