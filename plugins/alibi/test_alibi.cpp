// ALiBi: the published slopes for power-of-two and other head counts; linear bias.
#include "helpers.h"

using lengen::test::make_scheme;

namespace {

lengen::SchemeContext ctx(int64_t heads) {
  lengen::SchemeContext c;
  c.d_model = 8 * heads;
  c.heads = heads;
  c.head_dim = 8;
  c.layers = 1;
  return c;
}

std::vector<double> slopes_of(int64_t heads) {
  auto s = make_scheme("alibi", ctx(heads));
  auto t = s->named_buffers()["slopes"].to(torch::kFloat64);
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

}  // namespace

TEST_CASE("alibi: published slopes", "[alibi]") {
  // 8 heads: 1/2, 1/4, ..., 1/256 (Press et al. 2022).
  auto s8 = slopes_of(8);
  for (int h = 0; h < 8; ++h) {
    CHECK(s8[h] == Approx(std::pow(2.0, -(h + 1))));
  }
  // 4 heads: 2^-2, 2^-4, 2^-6, 2^-8.
  auto s4 = slopes_of(4);
  CHECK(s4 == std::vector<double>{0.25, 0.0625, 0.015625, 0.00390625});
  // 6 heads: slopes(4) then slopes(8)[0::2][:2] = 2^-1, 2^-3.
  auto s6 = slopes_of(6);
  CHECK(s6 == std::vector<double>{0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125});
  // 12 heads: slopes(8) then slopes(16)[0::2][:4] = 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
  auto s12 = slopes_of(12);
  REQUIRE(s12.size() == 12);
  CHECK(s12[8] == Approx(std::pow(2.0, -0.5)));
  CHECK(s12[11] == Approx(std::pow(2.0, -3.5)));
}

TEST_CASE("alibi: bias is -m_h times the distance and shared across layers", "[alibi]") {
  auto s = make_scheme("alibi", ctx(2));
  auto ids = torch::arange(5).view({1, 1, 5});
  lengen::AttentionContext a;
  a.query_ids = s->transform_ids(ids, 0, false);
  a.key_ids = a.query_ids;
  auto b = s->additive_bias(a);  // [1, 2, 5, 5]
  REQUIRE(b.sizes() == torch::IntArrayRef({1, 2, 5, 5}));
  CHECK(b[0][0][4][1].item<double>() == Approx(-0.0625 * 3));  // 2 heads: slopes 1/16, 1/256
  CHECK(b[0][1][3][3].item<double>() == 0.0);
  // Translation invariance: bias(i + c, j + c) == bias(i, j).
  lengen::AttentionContext shifted = a;
  shifted.query_ids = a.query_ids + 17;
  shifted.key_ids = shifted.query_ids;
  CHECK(torch::equal(s->additive_bias(shifted), b));
  // A second layer of the same forward reuses the tensor.
  a.layer = 1;
  auto again = s->additive_bias(a);
  CHECK(again.is_same(s->additive_bias(a)));
}
