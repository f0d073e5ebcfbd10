// RPE_k (Shaw et al. 2018): the logit term is q_i . w_{clip(p_i - p_j, k)} / sqrt(D), constant
// beyond distance k; the value term is sum_j a_ij w^V_{clip(p_i - p_j, k)}.
#include "helpers.h"

using lengen::test::make_scheme;
using lengen::test::max_abs_diff;

namespace {

// d_model, heads, head_dim, layers, levels
lengen::SchemeContext ctx() {
  return lengen::SchemeContext{16, 2, 8, 2, 1, ""};
}

lengen::AttentionContext positions(const torch::Tensor& p, int64_t layer = 0) {
  lengen::AttentionContext a;
  a.layer = layer;
  a.query_ids = p.view({1, 1, -1});
  a.key_ids = a.query_ids;
  return a;
}

}  // namespace

TEST_CASE("rpe_k: the logit term follows the clipped-distance formula", "[rpe]") {
  auto s = make_scheme("{name: rpe_k, k: 3}", ctx());
  s->to(torch::kFloat64);
  CHECK(s->hooks() == lengen::kHookRelativeLogits);
  auto table = s->named_parameters()["key_vectors"];  // [layers, 2k+1, D]
  REQUIRE(table.sizes() == torch::IntArrayRef({2, 7, 8}));
  torch::NoGradGuard ng;
  const int64_t T = 10;
  auto q = torch::randn({1, 2, T, 8}, torch::kFloat64);
  auto k = torch::randn({1, 2, T, 8}, torch::kFloat64);
  for (int64_t layer : {0, 1}) {
    auto a = positions(torch::arange(T), layer);
    auto r = s->relative_logits(q, k, a);  // [1, H, T, T]
    REQUIRE(r.sizes() == torch::IntArrayRef({1, 2, T, T}));
    for (int64_t i = 0; i < T; ++i) {
      for (int64_t j = 0; j < T; ++j) {
        const int64_t c = std::max<int64_t>(-3, std::min<int64_t>(3, i - j)) + 3;
        auto expect = (q[0].select(1, i) * table[layer][c]).sum(-1) / std::sqrt(8.0);  // [H]
        CHECK(max_abs_diff(r[0].select(1, i).select(1, j), expect) < 1e-12);
      }
    }
    // Clipping: every key at distance >= k from query 9 gets the same term.
    auto row = r[0].select(1, 9);  // [H, T]
    CHECK(max_abs_diff(row.slice(1, 0, 7), row.select(1, 6).unsqueeze(1).expand({2, 7})) < 1e-12);
    CHECK(max_abs_diff(row.select(1, 6), row.select(1, 7)) > 1e-6);
  }
  // Layers have their own tables; a shared table is one.
  CHECK(max_abs_diff(s->relative_logits(q, k, positions(torch::arange(T), 0)),
                     s->relative_logits(q, k, positions(torch::arange(T), 1))) > 1e-6);
  auto shared = make_scheme("{name: rpe_k, per_layer: false, k: 16}", ctx());
  CHECK(shared->named_parameters()["key_vectors"].sizes() == torch::IntArrayRef({1, 33, 8}));
  // The default is Hugging Face's relative_key table (Jelassi et al.): 2 * 512 - 1 rows.
  CHECK(make_scheme("rpe_k", ctx())->named_parameters()["key_vectors"].sizes() ==
        torch::IntArrayRef({2, 1023, 8}));
}

TEST_CASE("rpe_k: relative, so a shift of every position changes nothing", "[rpe]") {
  auto s = make_scheme("{name: rpe_k, k: 4, ids: task}", ctx());
  torch::NoGradGuard ng;
  auto q = torch::randn({1, 2, 6, 8});
  auto p = torch::tensor({0, 1, 1, 2, 5, 3}, torch::kInt64);
  auto r0 = s->relative_logits(q, q, positions(p));
  auto r1 = s->relative_logits(q, q, positions(p + 1000));
  CHECK(max_abs_diff(r0, r1) == 0.0);
}

TEST_CASE("rpe_k: value vectors are weighted by the attention", "[rpe]") {
  auto s = make_scheme("{name: rpe_k, k: 2, values: true}", ctx());
  s->to(torch::kFloat64);
  CHECK(s->hooks() == (lengen::kHookRelativeLogits | lengen::kHookRelativeValues));
  auto wv = s->named_parameters()["value_vectors"][0];  // [2k+1, D]
  torch::NoGradGuard ng;
  const int64_t T = 6;
  auto a = positions(torch::arange(T));
  // All weight on key j: the term is w^V of clip(i - j).
  auto onehot = torch::zeros({1, 2, T, T}, torch::kFloat64);
  onehot.select(3, 1).fill_(1.0);
  auto z = s->relative_values(onehot, a);  // [1, H, T, D]
  REQUIRE(z.sizes() == torch::IntArrayRef({1, 2, T, 8}));
  for (int64_t i = 0; i < T; ++i) {
    const int64_t c = std::max<int64_t>(-2, std::min<int64_t>(2, i - 1)) + 2;
    CHECK(max_abs_diff(z[0][1][i], wv[c]) < 1e-12);
  }
  // Uniform weights over keys 0..T-1 from query 5: the mean of w^V_{clip(5 - j)}.
  auto uniform = torch::full({1, 2, T, T}, 1.0 / T, torch::kFloat64);
  auto expect = (4 * wv[4] + wv[3] + wv[2]) / T;  // distances 5,4,3,2 clip to 2, then 1, 0
  CHECK(max_abs_diff(s->relative_values(uniform, a)[0][0][5], expect) < 1e-12);
}

TEST_CASE("rpe_k: attention kinds and options", "[rpe]") {
  auto s = make_scheme("rpe_k", ctx());
  CHECK(s->supports(lengen::AttentionKind::kCausalSelf));
  CHECK(s->supports(lengen::AttentionKind::kBidirectionalSelf));
  CHECK(!s->supports(lengen::AttentionKind::kCross));
  CHECK_THROWS_WITH(make_scheme("{name: rpe_k, k: 0}", ctx()), Catch::Contains("k"));
  CHECK_THROWS_WITH(make_scheme("{name: rpe_k, value: true}", ctx()), Catch::Contains("values"));
}

TEST_CASE("rpe_k: the default table (k 511, HF relative_key) gives q . R[i - j + 511]", "[rpe]") {
  // Only the rows a sequence uses enter the product (41 tokens touch 81 of 1023 rows); the
  // terms are the ones of the whole table, for the logits and the value vectors alike.
  auto s = make_scheme("{name: rpe_k, values: true}", ctx());
  s->to(torch::kFloat64);
  auto table = s->named_parameters()["key_vectors"][1];  // layer 1, [1023, D]
  auto values = s->named_parameters()["value_vectors"][1];
  torch::NoGradGuard ng;
  const int64_t T = 12;
  auto q = torch::randn({1, 2, T, 8}, torch::kFloat64);
  auto p = torch::tensor({0, 3, 4, 9, 10, 20, 21, 22, 30, 31, 40, 41}, torch::kInt64);
  auto a = positions(p, 1);
  auto r = s->relative_logits(q, q, a);
  auto probs = torch::softmax(torch::randn({1, 2, T, T}, torch::kFloat64), -1);
  auto z = s->relative_values(probs, a);  // [1, H, T, D]
  for (int64_t i = 0; i < T; ++i) {
    auto expect_z = torch::zeros({2, 8}, torch::kFloat64);
    for (int64_t j = 0; j < T; ++j) {
      const int64_t row = p[i].item<int64_t>() - p[j].item<int64_t>() + 511;
      auto expect = (q[0].select(1, i) * table[row]).sum(-1) / std::sqrt(8.0);  // [H]
      CHECK(max_abs_diff(r[0].select(1, i).select(1, j), expect) < 1e-12);
      expect_z += probs[0].select(1, i).select(1, j).unsqueeze(1) * values[row].unsqueeze(0);
    }
    CHECK(max_abs_diff(z[0].select(1, i), expect_z) < 1e-12);
  }
}
