// T5 bias: bucket boundaries equal the published bucket function at chosen distances.
#include "helpers.h"

using lengen::test::make_scheme;

namespace {

// d_model, heads, head_dim, layers, levels
lengen::SchemeContext ctx() {
  return lengen::SchemeContext{16, 1, 16, 2, 1, ""};
}

// Bucket of (query position q, key position k): the table holds each bucket's own index.
int64_t bucket_of(lengen::PositionScheme& s, int64_t q, int64_t k, lengen::AttentionKind kind) {
  torch::NoGradGuard ng;
  auto w = s.named_parameters()["weight"];
  w.copy_(torch::arange(w.size(1), torch::kFloat32).view({1, -1, 1}).expand_as(w));
  lengen::AttentionContext a;
  a.kind = kind;
  a.query_ids = torch::full({1, 1, 1}, q, torch::kInt64);
  a.key_ids = torch::full({1, 1, 1}, k, torch::kInt64);
  return static_cast<int64_t>(s.additive_bias(a).item<float>());
}

}  // namespace

TEST_CASE("t5_bias: published bucket function (B=32, max_distance=128)", "[t5]") {
  auto s = make_scheme("{name: t5_bias, ids: task}", ctx());
  const auto causal = lengen::AttentionKind::kCausalSelf;
  const auto bidir = lengen::AttentionKind::kBidirectionalSelf;
  // Unidirectional: n = query - key; exact below 16, then log buckets, capped at 31.
  for (int64_t n = 0; n < 16; ++n) {
    CHECK(bucket_of(*s, 200, 200 - n, causal) == n);
  }
  CHECK(bucket_of(*s, 200, 184, causal) == 16);  // n = 16
  CHECK(bucket_of(*s, 200, 180, causal) == 17);  // n = 20: 16 + floor(ln 1.25 / ln 8 * 16)
  CHECK(bucket_of(*s, 200, 100, causal) == 30);  // n = 100: 16 + floor(ln 6.25 / ln 8 * 16)
  CHECK(bucket_of(*s, 200, 72, causal) == 31);   // n = 128
  CHECK(bucket_of(*s, 2000, 0, causal) == 31);   // far beyond max_distance
  // Bidirectional: 16 buckets per sign, exact below 8, keys after the query offset by 16.
  CHECK(bucket_of(*s, 50, 47, bidir) == 3);
  CHECK(bucket_of(*s, 50, 53, bidir) == 19);
  CHECK(bucket_of(*s, 50, 40, bidir) == 8);  // n = 10: 8 + floor(ln 1.25 / ln 16 * 8)
  CHECK(bucket_of(*s, 50, 60, bidir) == 24);
  CHECK(bucket_of(*s, 150, 50, bidir) == 15);  // n = 100: 8 + floor(ln 12.5 / ln 16 * 8)
}

TEST_CASE("t5_bias: shared or per-layer tables", "[t5]") {
  CHECK(make_scheme("t5_bias", ctx())->named_parameters()["weight"].size(0) == 1);
  CHECK(make_scheme("{name: t5_bias, per_layer: true}", ctx())
            ->named_parameters()["weight"]
            .size(0) == 2);
  CHECK(!make_scheme("t5_bias", ctx())->supports(lengen::AttentionKind::kCross));
}
