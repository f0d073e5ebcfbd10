// windowed: the paper's window shapes (decoder self, cross unary and interleaved, by the
// spec's row/column formulas), the nearest-key fallback, encoder attention left alone.
#include "helpers.h"

using lengen::test::make_scheme;

namespace {

lengen::SchemeContext ctx() {
  return lengen::test::small_scheme_context();
}

torch::Tensor ids(std::vector<int64_t> v) {
  return torch::tensor(v).view({1, 1, -1});
}

// Open cells (bias 0) of a [1, 1, T, S] bias as a bool matrix [T, S].
torch::Tensor open_cells(const torch::Tensor& b) {
  return b[0][0] == 0;
}

torch::Tensor bias(lengen::PositionScheme& s,
                   lengen::AttentionKind kind,
                   const torch::Tensor& q,
                   const torch::Tensor& k) {
  lengen::AttentionContext a;
  a.kind = kind;
  a.query_ids = q;
  a.key_ids = k;
  a.query_length = q.size(-1);
  a.key_length = k.size(-1);
  return s.additive_bias(a);
}

}  // namespace

TEST_CASE("windowed: decoder self-attention keeps the diagonal and w keys below it", "[windowed]") {
  for (int64_t w : {0, 1, 2}) {
    auto s = make_scheme(fmt::format("{{name: windowed, window: {}}}", w), ctx());
    auto b = bias(
        *s, lengen::AttentionKind::kCausalSelf, ids({1, 2, 3, 4, 5, 6}), ids({1, 2, 3, 4, 5, 6}));
    REQUIRE(b.sizes() == torch::IntArrayRef({1, 1, 6, 6}));
    auto open = open_cells(b);
    for (int64_t i = 0; i < 6; ++i) {
      for (int64_t j = 0; j < 6; ++j) {
        CHECK(open[i][j].item<bool>() == (j <= i && i - j <= w));
      }
    }
    CHECK(torch::isinf(b).logical_or(b == 0).all().item<bool>());  // {0, -inf} only
  }
}

TEST_CASE("windowed: cross-attention is the paper's anti-diagonal band (unary input)",
          "[windowed]") {
  // Input x_n .. x_1 (x_r at 1-indexed column S - r + 1, ID r); decoder row r predicts y_r
  // (ID r). The spec: row r opens [S - r + 1 - w, S - r + 1 + w] intersected with [1, S].
  const int64_t S = 7, w = 1;
  std::vector<int64_t> src, tgt;
  for (int64_t c = 1; c <= S; ++c)
    src.push_back(S - c + 1);
  for (int64_t r = 1; r <= S + 1; ++r)
    tgt.push_back(r);
  auto s = make_scheme("{name: windowed, window: 1}", ctx());
  auto open = open_cells(bias(*s, lengen::AttentionKind::kCross, ids(tgt), ids(src)));
  for (int64_t r = 1; r <= S + 1; ++r) {
    for (int64_t c = 1; c <= S; ++c) {
      const bool want = c >= S - r + 1 - w && c <= S - r + 1 + w;
      CHECK(open[r - 1][c - 1].item<bool>() == want);
    }
  }
}

TEST_CASE("windowed: an interleaved input spans and steps over two positions", "[windowed]") {
  // `+ a_n b_n ... a_1 b_1`, S = 2n + 1: a_r at column S - 2r + 1, b_r at S - 2r + 2, both ID r;
  // the operator ID n + 1. The spec: row r opens [S - 2r + 1 - 2w, S - 2r + 2 + 2w] in [1, S].
  const int64_t n = 6, S = 2 * n + 1;
  for (int64_t w : {1, 2}) {
    std::vector<int64_t> src{n + 1}, tgt;
    for (int64_t r = n; r >= 1; --r) {
      src.push_back(r);
      src.push_back(r);
    }
    for (int64_t r = 1; r <= n + 2; ++r)
      tgt.push_back(r);  // SOS .. the row predicting EOS
    auto s = make_scheme(fmt::format("{{name: windowed, window: {}}}", w), ctx());
    auto open = open_cells(bias(*s, lengen::AttentionKind::kCross, ids(tgt), ids(src)));
    for (int64_t r = 1; r <= n + 2; ++r) {
      for (int64_t c = 1; c <= S; ++c) {
        const bool want = c >= S - 2 * r + 1 - 2 * w && c <= S - 2 * r + 2 + 2 * w;
        CHECK(open[r - 1][c - 1].item<bool>() == want);
      }
    }
  }
}

TEST_CASE("windowed: units: tokens opens the query's own digits and w tokens beside them",
          "[windowed]") {
  // `+ a_n b_n ... a_1 b_1`, a_r at column S - 2r + 1, b_r at S - 2r + 2: row r opens
  // [S - 2r + 1 - w, S - 2r + 2 + w], 2 + 2w keys (b_{r+1} a_r b_r a_{r-1} for w = 1), where
  // units: ids opens 2 + 4w. A unary input gets the same band as units: ids.
  const int64_t n = 6, S = 2 * n + 1;
  for (int64_t w : {0, 1, 2}) {
    std::vector<int64_t> src{n + 1}, tgt;
    for (int64_t r = n; r >= 1; --r) {
      src.push_back(r);
      src.push_back(r);
    }
    for (int64_t r = 1; r <= n; ++r)
      tgt.push_back(r);
    auto s = make_scheme(fmt::format("{{name: windowed, window: {}, units: tokens}}", w), ctx());
    auto open = open_cells(bias(*s, lengen::AttentionKind::kCross, ids(tgt), ids(src)));
    for (int64_t r = 1; r <= n; ++r) {
      for (int64_t c = 1; c <= S; ++c) {
        const bool want = c >= S - 2 * r + 1 - w && c <= S - 2 * r + 2 + w;
        CHECK(open[r - 1][c - 1].item<bool>() == want);
      }
    }
  }
  std::vector<int64_t> unary{5, 4, 3, 2, 1}, rows{1, 2, 3, 4, 5, 6, 7};
  auto by_ids = make_scheme("{name: windowed, window: 1}", ctx());
  auto by_tokens = make_scheme("{name: windowed, window: 1, units: tokens}", ctx());
  CHECK(torch::equal(bias(*by_ids, lengen::AttentionKind::kCross, ids(rows), ids(unary)),
                     bias(*by_tokens, lengen::AttentionKind::kCross, ids(rows), ids(unary))));
  // Decoder self-attention has one token per ID: the units do not change it.
  CHECK(torch::equal(bias(*by_ids, lengen::AttentionKind::kCausalSelf, ids(rows), ids(rows)),
                     bias(*by_tokens, lengen::AttentionKind::kCausalSelf, ids(rows), ids(rows))));
  CHECK_THROWS_WITH(make_scheme("{name: windowed, units: digits}", ctx()),
                    Catch::Contains("units"));
}

TEST_CASE("windowed: cross_band: released is the released code's one-sided band", "[windowed]") {
  // The authors' generate_cross_attention_mask(S, L, w) over `SOS x_n .. x_1 EOS` (S = n + 2)
  // opens, in 0-based row i, the columns S - 1 - i - w .. S - 1 - i (its right half is
  // commented out). Column S - 1 - k holds x_k (k = 0: the EOS) and row i predicts y_{i+1}, so
  // row r = i + 1 sees x_{r-1} .. x_{r-1+w}. lengen's source is x_n .. x_1 alone (no SOS/EOS).
  const int64_t n = 7, S = n + 2;
  std::vector<int64_t> src, tgt;
  for (int64_t r = n; r >= 1; --r)
    src.push_back(r);
  for (int64_t r = 1; r <= n; ++r)
    tgt.push_back(r);
  for (int64_t w : {1, 2, 3}) {
    auto s =
        make_scheme(fmt::format("{{name: windowed, window: {}, cross_band: released}}", w), ctx());
    auto open = open_cells(bias(*s, lengen::AttentionKind::kCross, ids(tgt), ids(src)));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 1; k <= n; ++k) {  // x_k: released column S - 1 - k, lengen's n - k
        const int64_t col = S - 1 - k;
        CHECK(open[i][n - k].item<bool>() == (col >= S - 1 - i - w && col <= S - 1 - i));
      }
    }
  }
  // w = 1: the digit being predicted and the one below it; the first row sees x_1 alone.
  auto s = make_scheme("{name: windowed, window: 1, cross_band: released}", ctx());
  auto open = open_cells(bias(*s, lengen::AttentionKind::kCross, ids(tgt), ids(src)));
  CHECK(open[0].sum().item<int64_t>() == 1);
  CHECK(open[0][n - 1].item<bool>());
  CHECK(open[3].sum().item<int64_t>() == 2);
  // Decoder self-attention is one-sided already: the option leaves it alone.
  auto paper = make_scheme("{name: windowed, window: 1}", ctx());
  CHECK(torch::equal(bias(*paper, lengen::AttentionKind::kCausalSelf, ids(tgt), ids(tgt)),
                     bias(*s, lengen::AttentionKind::kCausalSelf, ids(tgt), ids(tgt))));
  CHECK_THROWS_WITH(make_scheme("{name: windowed, cross_band: left}", ctx()),
                    Catch::Contains("cross_band"));
  CHECK_THROWS_WITH(make_scheme("{name: windowed, units: tokens, cross_band: released}", ctx()),
                    Catch::Contains("units: ids"));
}

TEST_CASE("windowed: a row with no key in its window opens its nearest keys", "[windowed]") {
  auto s = make_scheme("{name: windowed, window: 1}", ctx());
  auto b = bias(*s, lengen::AttentionKind::kCross, ids({1, 9}), ids({3, 2, 1}));
  auto open = open_cells(b);
  CHECK(open[0].sum().item<int64_t>() == 2);  // IDs 2, 1
  CHECK(open[1][0].item<bool>());             // ID 9: nearest is 3
  CHECK(open[1].sum().item<int64_t>() == 1);
  CHECK(torch::isfinite(b).any(-1).all().item<bool>());
}

TEST_CASE("windowed: encoder self-attention is left alone unless asked", "[windowed]") {
  auto off = make_scheme("windowed", ctx());
  CHECK(!bias(*off, lengen::AttentionKind::kBidirectionalSelf, ids({1, 2, 3}), ids({1, 2, 3}))
             .defined());
  auto on = make_scheme("{name: windowed, encoder: true}", ctx());
  auto open = open_cells(
      bias(*on, lengen::AttentionKind::kBidirectionalSelf, ids({1, 2, 3, 4}), ids({1, 2, 3, 4})));
  CHECK(open[0][1].item<bool>());
  CHECK(open[1][0].item<bool>());
  CHECK(!open[0][2].item<bool>());
  auto no_cross = make_scheme("{name: windowed, cross: false}", ctx());
  CHECK(!bias(*no_cross, lengen::AttentionKind::kCross, ids({1}), ids({1, 2})).defined());
}

TEST_CASE("windowed: cyclic indexing is a shared transform every scheme gets", "[windowed]") {
  // `cyclic: T` takes the IDs modulo T after the scheme's own transform: sinusoidal over the
  // sequence index then sees 0 1 2 0 1 2 ... (Duan & Shi's CPI, T = 3).
  auto sin = make_scheme("{name: sinusoidal, cyclic: 3}", ctx());
  CHECK(sin->cyclic() == 3);
  auto got = sin->position_ids(torch::zeros({1, 2, 7}, torch::kLong), 0, false);
  CHECK(torch::equal(got.view({-1}), torch::tensor({0, 1, 2, 0, 1, 2, 0})));
  auto plain = make_scheme("sinusoidal", ctx());
  CHECK(torch::allclose(sin->embed(got),
                        plain->embed(torch::tensor({0, 1, 2, 0, 1, 2, 0}).view({1, 1, 7}))));
  // Decoding offsets keep counting: position 7 of a cached sequence is 7 mod 3 = 1.
  CHECK(sin->position_ids(torch::zeros({1, 1, 1}, torch::kLong), 7, false).item<int64_t>() == 1);
  CHECK_THROWS_WITH(make_scheme("{name: windowed, cyclic: -1}", ctx()), Catch::Contains("cyclic"));
}
