// FIRE: the bias is a function of the normalised distance psi(i-j)/psi(max(L, i)), finite for
// any length.
#include "helpers.h"

using lengen::test::make_scheme;

namespace {

// d_model, heads, head_dim, layers, levels
lengen::SchemeContext ctx() {
  return lengen::SchemeContext{16, 3, 8, 2, 1, ""};
}

torch::Tensor bias(lengen::PositionScheme& s, int64_t i, int64_t j, int64_t layer = 0) {
  lengen::AttentionContext a;
  a.layer = layer;
  a.query_ids = torch::full({1, 1, 1}, i, torch::kInt64);
  a.key_ids = torch::full({1, 1, 1}, j, torch::kInt64);
  return s.additive_bias(a).flatten();  // [H]
}

}  // namespace

TEST_CASE("fire: bias depends on the normalised distance only", "[fire]") {
  auto s = make_scheme("{name: fire, ids: task, init_threshold: 100}", ctx());
  s->to(torch::kFloat64);
  torch::NoGradGuard ng;
  // Below the threshold the normaliser is psi(L): translation invariance.
  CHECK(lengen::test::max_abs_diff(bias(*s, 50, 40), bias(*s, 90, 80)) < 1e-12);
  // Above it, the distance to position 0 normalises to 1 whatever the length.
  CHECK(lengen::test::max_abs_diff(bias(*s, 300, 0), bias(*s, 100000, 0)) < 1e-5);
  // ... and distance 0 normalises to 0.
  CHECK(lengen::test::max_abs_diff(bias(*s, 7, 7), bias(*s, 5000, 5000)) < 1e-12);
  // Finite for very long sequences; not constant.
  CHECK(torch::isfinite(bias(*s, 10000000, 3)).all().item<bool>());
  CHECK(lengen::test::max_abs_diff(bias(*s, 300, 0), bias(*s, 300, 299)) > 1e-6);
  // One module per layer by default.
  CHECK(lengen::test::max_abs_diff(bias(*s, 300, 0, 0), bias(*s, 300, 0, 1)) > 1e-6);
}

TEST_CASE("fire: shared module and attention kinds", "[fire]") {
  auto s = make_scheme("{name: fire, per_layer: false}", ctx());
  CHECK(s->named_parameters()["w1"].size(0) == 1);
  CHECK(s->supports(lengen::AttentionKind::kCausalSelf));
  CHECK(s->supports(lengen::AttentionKind::kBidirectionalSelf));
  CHECK(!s->supports(lengen::AttentionKind::kCross));
}

TEST_CASE("fire: bidirectional input is the signed normalised distance", "[fire]") {
  auto s = make_scheme("{name: fire, ids: task, init_threshold: 4}", ctx());
  s->to(torch::kFloat64);
  torch::NoGradGuard ng;
  auto bidir = [&](int64_t i, int64_t j) {
    lengen::AttentionContext a;
    a.kind = lengen::AttentionKind::kBidirectionalSelf;
    a.query_ids = torch::full({1, 1, 1}, i, torch::kInt64);
    a.key_ids = torch::full({1, 1, 1}, j, torch::kInt64);
    return s->additive_bias(a).flatten();  // [H]
  };
  // Keys before the query: the causal bias exactly.
  CHECK(lengen::test::max_abs_diff(bidir(90, 20), bias(*s, 90, 20)) < 1e-12);
  // Keys after the query normalise by the key's position: the farthest key maps to -1 at any
  // length, and the two directions are told apart.
  CHECK(lengen::test::max_abs_diff(bidir(0, 300), bidir(0, 100000)) < 1e-5);
  CHECK(lengen::test::max_abs_diff(bidir(0, 300), bidir(300, 0)) > 1e-6);
  CHECK(torch::isfinite(bidir(3, 10000000)).all().item<bool>());
}

TEST_CASE("fire: c and the threshold learn", "[fire]") {
  auto s = make_scheme("{name: fire, init_threshold: 4}", ctx());
  lengen::AttentionContext a;
  a.query_ids = torch::arange(12).view({1, 1, 12});
  a.key_ids = a.query_ids;
  s->additive_bias(a).pow(2).sum().backward();
  for (const char* p : {"c", "threshold_sqrt", "w1", "w3"}) {
    INFO(p);
    auto g = s->named_parameters()[p].grad();
    REQUIRE(g.defined());
    CHECK(g.abs().sum().item<double>() > 0);
  }
}
