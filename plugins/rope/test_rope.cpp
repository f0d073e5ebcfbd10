// RoPE: the q.k score depends only on the position difference; rotations preserve norms.
#include "helpers.h"

using lengen::test::make_scheme;

namespace {

// d_model, heads, head_dim, layers, levels
lengen::SchemeContext ctx() {
  return lengen::SchemeContext{32, 2, 16, 1, 1, ""};
}

// Score of one query at position p and one key at position r under the scheme.
double score(lengen::PositionScheme& s,
             const torch::Tensor& q,
             const torch::Tensor& k,
             int64_t p,
             int64_t r) {
  lengen::AttentionContext a;
  a.query_ids = torch::full({1, 1, 1}, p, torch::kInt64);
  a.key_ids = torch::full({1, 1, 1}, r, torch::kInt64);
  auto qk = s.transform_qk(q, k, a);
  return (qk.first * qk.second).sum().item<double>();
}

}  // namespace

TEST_CASE("rope: scores depend only on the position difference", "[rope]") {
  for (const char* pairing : {"half", "interleaved"}) {
    DYNAMIC_SECTION(pairing) {
      auto s = make_scheme(fmt::format("{{name: rope, ids: task, pairing: {}}}", pairing), ctx());
      torch::manual_seed(0);
      auto q = torch::randn({1, 1, 1, 16}, torch::kFloat64);
      auto k = torch::randn({1, 1, 1, 16}, torch::kFloat64);
      s->to(torch::kFloat64);
      for (auto [p, r] : {std::pair<int64_t, int64_t>{5, 2}, {9, 9}, {40, 1}}) {
        const double base = score(*s, q, k, p, r);
        for (int64_t c : {1, 7, 1000}) {
          CHECK(score(*s, q, k, p + c, r + c) == Approx(base).epsilon(1e-9));
        }
      }
      // Different differences give different scores (the scheme is not a no-op).
      CHECK(std::abs(score(*s, q, k, 5, 2) - score(*s, q, k, 5, 3)) > 1e-6);
      // Position 0 is the identity; rotations keep norms.
      lengen::AttentionContext a;
      a.query_ids = torch::zeros({1, 1, 1}, torch::kInt64);
      a.key_ids = torch::full({1, 1, 1}, 123, torch::kInt64);
      auto qk = s->transform_qk(q, k, a);
      CHECK(lengen::test::max_abs_diff(qk.first, q) < 1e-12);
      CHECK(qk.second.norm().item<double>() == Approx(k.norm().item<double>()).epsilon(1e-12));
    }
  }
}

TEST_CASE("rope: partial rotation leaves the other dimensions alone", "[rope]") {
  auto s = make_scheme("{name: rope, dims: 8}", ctx());
  auto q = torch::randn({1, 2, 3, 16});
  lengen::AttentionContext a;
  a.query_ids = torch::arange(3).view({1, 1, 3});
  a.key_ids = a.query_ids;
  auto qk = s->transform_qk(q, q, a);
  CHECK(torch::equal(qk.first.slice(-1, 8), q.slice(-1, 8)));
  CHECK(lengen::test::max_abs_diff(qk.first.slice(-1, 0, 8), q.slice(-1, 0, 8)) > 1e-3);
}

TEST_CASE("rope: option and attention-kind checks", "[rope]") {
  CHECK_THROWS_WITH(make_scheme("{name: rope, dims: 7}", ctx()), Catch::Contains("must be even"));
  auto s = make_scheme("rope", ctx());
  CHECK(s->supports(lengen::AttentionKind::kCausalSelf));
  CHECK(s->supports(lengen::AttentionKind::kBidirectionalSelf));
  CHECK(!s->supports(lengen::AttentionKind::kCross));
}

TEST_CASE("rope: a float64 model rotates by float64 angles", "[rope]") {
  // Against a hand computation with double frequencies base^(-2k/d) ("half" pairing: k and
  // k + d/2): float32-rounded frequencies were off by ~1e-9 at these positions.
  auto s = make_scheme("{name: rope, ids: task}", ctx());
  s->to(torch::kFloat64);
  torch::manual_seed(1);
  auto q = torch::randn({1, 1, 1, 16}, torch::kFloat64);
  lengen::AttentionContext a;
  for (int64_t p : {3, 1000, 123457}) {
    a.query_ids = a.key_ids = torch::full({1, 1, 1}, p, torch::kInt64);
    auto got = s->transform_qk(q, q, a).first.view({16});
    double worst = 0;
    for (int64_t k = 0; k < 8; ++k) {
      const double angle = static_cast<double>(p) * std::pow(10000.0, -2.0 * k / 16.0);
      const double x = q.view({16})[k].item<double>(), y = q.view({16})[k + 8].item<double>();
      worst = std::max(
          worst, std::abs(got[k].item<double>() - (x * std::cos(angle) - y * std::sin(angle))));
      worst = std::max(
          worst, std::abs(got[k + 8].item<double>() - (x * std::sin(angle) + y * std::cos(angle))));
    }
    INFO("position " << p);
    CHECK(worst < 1e-11);
  }
}
