// Position Coupling: random offsets, per-level tables, refusal of out-of-range IDs.
#include "helpers.h"

#include "lengen/position/sinusoidal.h"

using lengen::test::make_scheme;

namespace {
lengen::SchemeContext ctx(int64_t levels) {
  return lengen::test::small_scheme_context(levels);
}
}  // namespace

TEST_CASE("coupling: one table per level, summed", "[coupling]") {
  auto s = make_scheme("{name: coupling, levels: 2, max_position: [10, 5]}", ctx(2));
  auto params = s->named_parameters();
  REQUIRE(params.size() == 2);
  CHECK(params["level0"].sizes() == torch::IntArrayRef({11, 16}));
  CHECK(params["level1"].sizes() == torch::IntArrayRef({6, 16}));
  s->eval();
  auto ids = torch::tensor({3, 4}, torch::kInt64).view({2, 1, 1});  // level0 = 3, level1 = 4
  auto got = s->embed(s->transform_ids(ids, 0, false));             // [1, 1, 16]
  auto expect = params["level0"][3] + params["level1"][4];
  CHECK(lengen::test::max_abs_diff(got.view({16}), expect) < 1e-6);
}

TEST_CASE("coupling: sinusoidal initialisation", "[coupling]") {
  auto s = make_scheme("{name: coupling, max_position: 20, init_scale: 0.5}", ctx(1));
  auto w = s->named_parameters()["level0"];
  auto table = lengen::sinusoidal_table(21, 16) * 0.5;
  CHECK(lengen::test::max_abs_diff(w, table) < 1e-6);
  // Row p: (sin p, cos p, sin p w1, cos p w1, ...)
  CHECK(table[3][0].item<double>() == Approx(0.5 * std::sin(3.0)).epsilon(1e-5));
  CHECK(table[3][1].item<double>() == Approx(0.5 * std::cos(3.0)).epsilon(1e-5));
}

TEST_CASE("coupling: the sinusoidal base sets the slowest frequency", "[coupling]") {
  // w_i = base^(-2i/C). With base 5 over C = 16 columns the last pair turns at 5^(-14/16)
  // rad per row, more than half a turn over 17 rows; Vaswani's 10000 barely moves there.
  auto s = make_scheme("{name: coupling, max_position: 16, init_base: 5}", ctx(1));
  auto w = s->named_parameters()["level0"];
  CHECK(lengen::test::max_abs_diff(w, lengen::sinusoidal_table(17, 16, 5.0)) < 1e-6);
  const double w_last = std::pow(5.0, -14.0 / 16.0);
  CHECK(w[5][14].item<double>() == Approx(std::sin(5 * w_last)).margin(1e-5));
  CHECK(w[5][15].item<double>() == Approx(std::cos(5 * w_last)).margin(1e-5));
  CHECK(w[16][15].item<double>() < -0.5);
  CHECK(lengen::sinusoidal_table(17, 16)[16][15].item<double>() > 0.99);
  CHECK_THROWS_WITH(make_scheme("{name: coupling, init_base: 1}", ctx(1)),
                    Catch::Contains("init_base"));
}

TEST_CASE("coupling: trainable false keeps the table fixed (a sinusoidal encoding of the IDs)",
          "[coupling]") {
  auto fixed = make_scheme("{name: coupling, max_position: 8, trainable: false}", ctx(1));
  auto learned = make_scheme("{name: coupling, max_position: 8}", ctx(1));
  auto w = fixed->named_parameters()["level0"];
  CHECK_FALSE(w.requires_grad());  // no gradient, so no optimizer updates it
  CHECK(learned->named_parameters()["level0"].requires_grad());
  CHECK(lengen::test::max_abs_diff(w, lengen::sinusoidal_table(9, 16)) < 1e-6);
  // A loss through both: only the learned table receives a gradient.
  auto ids = torch::tensor({1, 2, 3}, torch::kInt64).view({1, 1, 3});
  (fixed->embed(ids).sum() + learned->embed(ids).sum()).backward();
  CHECK_FALSE(w.grad().defined());
  CHECK(learned->named_parameters()["level0"].grad().defined());
}

TEST_CASE("coupling: random offsets shift non-zero IDs per sample and level", "[coupling]") {
  auto s = make_scheme("{name: coupling, levels: 2, max_position: [12, 9]}", ctx(2));
  // Two samples; level-0 max ID 5, level-1 max ID 3; zeros (BOS/EOS/pad) must stay zero.
  auto ids = torch::tensor({0, 1, 2, 5, 0, 0, 3, 4, 1, 0,  //
                            0, 1, 1, 3, 0, 0, 2, 2, 1, 0},
                           torch::kInt64)
                 .view({2, 2, 5});
  torch::manual_seed(3);
  std::set<int64_t> deltas0;
  for (int trial = 0; trial < 400; ++trial) {
    auto out = s->transform_ids(ids, 0, /*training=*/true);  // [2, 2, 5]
    CHECK(out.max().item<int64_t>() <= 12);
    CHECK(out[1].max().item<int64_t>() <= 9);
    CHECK(((ids == 0) == (out == 0)).all().item<bool>());
    auto d = out - ids;  // constant over the non-zero tokens of a (level, sample)
    for (int l = 0; l < 2; ++l) {
      for (int b = 0; b < 2; ++b) {
        auto nz = ids[l][b] != 0;
        auto dl = d[l][b].masked_select(nz);
        CHECK((dl == dl[0]).all().item<bool>());
        if (l == 0 && b == 0) {
          deltas0.insert(dl[0].item<int64_t>());
        }
      }
    }
  }
  // Level 0, sample 0: max ID 5, max_position 12 -> delta uniform over 0..7, all reached.
  CHECK(deltas0 == std::set<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  // Evaluation leaves the task's IDs untouched.
  CHECK(torch::equal(s->transform_ids(ids, 0, false), ids));
}

TEST_CASE("coupling: in a packed row each sample draws its own offset, within its own room",
          "[coupling][pack]") {
  auto s = make_scheme("{name: coupling, max_position: 12}", ctx(1));
  // One row: sample 0 (IDs 0 1 2 5 0, max 5: delta in 0..7), sample 1 (0 9 1 0, max 9: 0..3),
  // then two padding positions (segment -1, ID 0).
  auto ids = torch::tensor({0, 1, 2, 5, 0, 0, 9, 1, 0, 0, 0}, torch::kInt64).view({1, 1, 11});
  auto segments = torch::tensor({0, 0, 0, 0, 0, 1, 1, 1, 1, -1, -1}, torch::kInt64).view({1, 11});
  auto index = torch::tensor({0, 1, 2, 3, 4, 0, 1, 2, 3, 0, 1}, torch::kInt64).view({1, 11});
  torch::manual_seed(5);
  std::set<int64_t> first, second;
  int differ = 0;
  for (int trial = 0; trial < 400; ++trial) {
    auto out = s->position_ids(ids, 0, /*training=*/true, segments, index);  // [1, 1, 11]
    CHECK(((ids == 0) == (out == 0)).all().item<bool>());
    auto d = (out - ids)[0][0];
    const int64_t d0 = d[1].item<int64_t>(), d1 = d[6].item<int64_t>();
    CHECK(d[2].item<int64_t>() == d0);
    CHECK(d[3].item<int64_t>() == d0);
    CHECK(d[7].item<int64_t>() == d1);
    first.insert(d0);
    second.insert(d1);
    differ += d0 != d1;
  }
  CHECK(first == std::set<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});  // sample 0's room, all of it
  CHECK(second == std::set<int64_t>{0, 1, 2, 3});             // sample 1's, not the row's
  CHECK(differ > 200);                                        // drawn apart
  // Evaluation leaves the IDs as they are, packed or not.
  CHECK(torch::equal(s->position_ids(ids, 0, false, segments, index), ids));
  // A sample past max_position is refused in a packed row too, naming the ID and the level.
  auto too_long = ids.clone();
  too_long[0][0][6] = 13;
  CHECK_THROWS_WITH(s->position_ids(too_long, 0, true, segments, index),
                    Catch::Contains("needs position ID 13 at level 0 but max_position is 12"));
}

TEST_CASE("coupling: an evaluation ID above max_position is refused with names", "[coupling]") {
  auto s = make_scheme("{name: coupling, max_position: 8}", ctx(1));
  auto ok = torch::tensor({0, 8, 1}, torch::kInt64).view({1, 1, 3});
  CHECK_NOTHROW(s->check_ids(ok));
  auto bad = torch::tensor({0, 9, 1}, torch::kInt64).view({1, 1, 3});
  CHECK_THROWS_WITH(
      s->check_ids(bad),
      Catch::Contains("position ID 9 at level 0") && Catch::Contains("max_position is 8"));
  s->eval();
  CHECK_THROWS_WITH(s->embed(bad), Catch::Contains("max_position is 8"));
  CHECK_THROWS_WITH(s->transform_ids(bad, 0, /*training=*/true),
                    Catch::Contains("training sample needs position ID 9"));
}

TEST_CASE("coupling: option errors", "[coupling]") {
  CHECK_THROWS_WITH(make_scheme("{name: coupling, levels: 3}", ctx(1)),
                    Catch::Contains("emits 1 level"));
  CHECK_THROWS_WITH(make_scheme("{name: coupling, levels: 2, max_position: [4, 5, 6]}", ctx(2)),
                    Catch::Contains("3 values for 2 levels"));
  CHECK_THROWS_WITH(make_scheme("{name: coupling, max_positon: 4}", ctx(1)),
                    Catch::Contains("did you mean 'max_position'"));
}

TEST_CASE("coupling: an encoder-decoder's source and target share each sample's offset",
          "[coupling]") {
  auto s = make_scheme("{name: coupling, levels: 2, max_position: [30, 12]}", ctx(2));
  // [L=2, B=64, S=5] and [2, 64, U=4]: the source's largest IDs are below the target's.
  auto source = torch::tensor({0, 1, 2, 3, 0, 0, 1, 1, 2, 0}, torch::kInt64)
                    .view({2, 1, 5})
                    .expand({2, 64, 5})
                    .contiguous();
  auto target = torch::tensor({0, 4, 5, 6, 0, 3, 3, 3}, torch::kInt64)
                    .view({2, 1, 4})
                    .expand({2, 64, 4})
                    .contiguous();
  torch::manual_seed(3);
  auto [src, tgt] = s->transform_ids_pair(source, target, /*training=*/true);
  // Per sample and level one delta: every non-zero ID moved by it, on both sides.
  auto d_src = (src - source).select(2, 1);  // [2, 64] (column 1 is non-zero at both levels)
  auto d_tgt = (tgt - target).select(2, 1);  // [2, 64]
  CHECK(torch::equal(d_src, d_tgt));
  CHECK(torch::equal((src - source).select(2, 0), torch::zeros({2, 64}, torch::kInt64)));
  CHECK(d_src.max().item<int64_t>() > 0);  // offsets are drawn...
  // ...within the room the larger side leaves: 30 - 6 at level 0, 12 - 3 at level 1.
  CHECK(d_src[0].max().item<int64_t>() <= 24);
  CHECK(d_src[1].max().item<int64_t>() <= 9);
  // In evaluation both sides keep their IDs.
  auto [e_src, e_tgt] = s->transform_ids_pair(source, target, false);
  CHECK(torch::equal(e_src, source));
  CHECK(torch::equal(e_tgt, target));
}
