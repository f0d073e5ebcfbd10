// SSMax: each query is scaled by s_h log(n), n the keys it attends to; keys are left alone; the
// attention a query gives its best key stops fading with n.
#include "helpers.h"

#include <cmath>

using lengen::test::make_scheme;

namespace {

// d_model, heads, head_dim, layers, levels
lengen::SchemeContext ctx() {
  return lengen::SchemeContext{32, 2, 16, 1, 1, ""};
}

}  // namespace

TEST_CASE("ssmax: causal queries are scaled by log(index + 1) / log(reference)", "[ssmax]") {
  auto s = make_scheme("{name: ssmax, reference: 8}", ctx());
  s->to(torch::kFloat64);
  auto q = torch::randn({3, 2, 5, 16}, torch::kFloat64);  // [B, H, T, D]
  auto k = torch::randn({3, 2, 5, 16}, torch::kFloat64);
  for (int64_t offset : {0, 7}) {
    lengen::AttentionContext a;
    a.kind = lengen::AttentionKind::kCausalSelf;
    a.query_ids = s->position_ids(torch::zeros({1, 3, 5}, torch::kInt64), offset, false);
    a.key_ids = a.query_ids;
    a.query_offset = offset;
    auto [q2, k2] = s->transform_qk(q, k, a);
    CHECK(torch::equal(k2, k));
    for (int64_t t = 0; t < 5; ++t) {
      const double want = std::log(static_cast<double>(offset + t + 1)) / std::log(8.0);
      auto row = q.select(2, t);
      // s_h starts as the float nearest 1 / log(reference): 1e-7 relative.
      CHECK(lengen::test::max_abs_diff(q2.select(2, t), row * want) < 1e-6);
    }
  }
}

TEST_CASE("ssmax: bidirectional attention counts each sample's real keys", "[ssmax]") {
  auto s = make_scheme("{name: ssmax}", ctx());
  s->to(torch::kFloat64);
  auto q = torch::ones({2, 2, 4, 16}, torch::kFloat64);
  lengen::AttentionContext a;
  a.kind = lengen::AttentionKind::kBidirectionalSelf;
  a.query_ids = torch::arange(4).view({1, 1, 4});
  a.key_ids = a.query_ids;
  a.key_length = 4;
  a.key_padding = torch::tensor({0, 0, 0, 0, 0, 0, 1, 1}, torch::kBool).view({2, 4});
  auto out = s->transform_qk(q, q, a).first;
  CHECK(out[0].max().item<double>() == Approx(std::log(4.0) / std::log(16.0)).epsilon(1e-6));
  CHECK(out[1].max().item<double>() == Approx(std::log(2.0) / std::log(16.0)).epsilon(1e-6));
  a.key_padding = torch::Tensor();  // no padding: every sample sees key_length keys
  out = s->transform_qk(q, q, a).first;
  CHECK(out.min().item<double>() == Approx(std::log(4.0) / std::log(16.0)).epsilon(1e-6));
}

TEST_CASE("ssmax: the scale is one learned scalar per head, or fixed", "[ssmax]") {
  auto learned = make_scheme("{name: ssmax}", ctx());
  REQUIRE(learned->parameters().size() == 1);
  CHECK(learned->parameters()[0].sizes() == torch::IntArrayRef({2}));
  auto fixed = make_scheme("{name: ssmax, learn: false}", ctx());
  CHECK(fixed->parameters().empty());
  CHECK(fixed->buffers().size() == 1);
  CHECK_THROWS_WITH(make_scheme("{name: ssmax, reference: 1}", ctx()),
                    Catch::Contains("reference"));
}

TEST_CASE("ssmax: the best key keeps its share of attention as the keys grow", "[ssmax]") {
  // One key scores g above n - 1 equal others. Plain softmax gives it 1 / (1 + (n-1) e^-g), which
  // falls to 0 as n grows; scaled by s log(n) with s g = 1 it gets 1 / (1 + (n-1) / n) >= 1/2.
  auto s = make_scheme("{name: ssmax, reference: 2.718281828459045}", ctx());  // s = 1
  s->to(torch::kFloat64);
  const double g = 1.0;
  double plain_last = 1, scaled_last = 1;
  for (int64_t n : {10, 100, 1000, 10000}) {
    auto q = torch::zeros({1, 2, 1, 16}, torch::kFloat64);
    q.select(-1, 0).fill_(g);
    auto k = torch::zeros({1, 2, n, 16}, torch::kFloat64);
    k.select(2, 0).select(-1, 0).fill_(1.0);  // the best key
    lengen::AttentionContext a;
    a.kind = lengen::AttentionKind::kCausalSelf;
    a.query_ids = torch::full({1, 1, 1}, n - 1, torch::kInt64);  // the query sees n keys
    auto q2 = s->transform_qk(q, k.narrow(2, n - 1, 1), a).first;
    auto plain = torch::softmax(torch::matmul(q, k.transpose(-1, -2)), -1)[0][0][0][0];
    auto scaled = torch::softmax(torch::matmul(q2, k.transpose(-1, -2)), -1)[0][0][0][0];
    CHECK(plain.item<double>() < plain_last);
    CHECK(scaled.item<double>() >= 0.5);
    CHECK(scaled.item<double>() <= scaled_last);
    plain_last = plain.item<double>();
    scaled_last = scaled.item<double>();
  }
  CHECK(plain_last < 0.001);
}
