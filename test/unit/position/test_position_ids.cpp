// The ID transforms every position scheme shares (PositionScheme::position_ids): randomized
// positions (Ruoss et al. 2023) and cyclic indexing.
#include "helpers.h"

#include "lengen/plugin/loader.h"
#include "lengen/position/scheme.h"

using namespace lengen;

namespace {

SchemeContext ctx() {
  return SchemeContext{16, 2, 8, 1, 1, ""};
}

// Coupled-looking IDs for 3 samples: repeated values and a gap, [1, 3, 9].
torch::Tensor coupled_ids() {
  return torch::tensor({0, 3, 2, 1, 0, 3, 2, 1, 0, 5, 4}, torch::kInt64)
      .view({1, 1, 11})
      .expand({1, 3, 11})
      .contiguous();
}

}  // namespace

TEST_CASE("randomized positions: each sample's IDs map in order onto distinct values in range",
          "[position]") {
  load_all_plugins();
  torch::manual_seed(1);
  auto s = test::make_scheme("{name: sinusoidal, ids: task, randomized: 64}", ctx());
  CHECK(s->randomized() == 64);
  const auto ids = coupled_ids();
  const auto out = s->position_ids(ids, 0, /*training=*/true);  // [1, 3, 11]
  REQUIRE(out.sizes() == torch::IntArrayRef({1, 3, 11}));
  for (int64_t b = 0; b < 3; ++b) {
    const auto in_row = ids[0][b], out_row = out[0][b];
    CHECK(out_row.min().item<int64_t>() >= 0);
    CHECK(out_row.max().item<int64_t>() < 64);
    for (int64_t i = 0; i < 11; ++i) {
      for (int64_t j = 0; j < 11; ++j) {
        const int64_t a = in_row[i].item<int64_t>(), c = in_row[j].item<int64_t>();
        const int64_t x = out_row[i].item<int64_t>(), y = out_row[j].item<int64_t>();
        // Equal IDs stay equal, order is kept strictly (distinct values).
        CHECK((a == c) == (x == y));
        CHECK((a < c) == (x < y));
      }
    }
  }
  // Samples draw their own maps; the same seed draws the same ones.
  CHECK(!torch::equal(out[0][0], out[0][1]));
  torch::manual_seed(1);
  CHECK(torch::equal(out, s->position_ids(ids, 0, true)));
  // Over many draws every value of the range is used: a sample, not a shift.
  std::vector<bool> seen(64, false);
  for (int r = 0; r < 200; ++r) {
    auto o = s->position_ids(ids, 0, true);
    for (int64_t v :
         std::vector<int64_t>(o.data_ptr<int64_t>(), o.data_ptr<int64_t>() + o.numel())) {
      seen[static_cast<size_t>(v)] = true;
    }
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }));
}

TEST_CASE(
    "randomized positions: absent at evaluation, before cyclic, and refused when out of range",
    "[position]") {
  load_all_plugins();
  const auto ids = coupled_ids();
  auto s = test::make_scheme("{name: sinusoidal, ids: task, randomized: 64}", ctx());
  CHECK(torch::equal(s->position_ids(ids, 0, /*training=*/false), ids));
  // Cyclic applies after the randomized map: training IDs are below the period.
  auto both = test::make_scheme("{name: sinusoidal, ids: task, randomized: 64, cyclic: 3}", ctx());
  CHECK(both->position_ids(ids, 0, true).max().item<int64_t>() < 3);
  CHECK(torch::equal(both->position_ids(ids, 0, false), torch::remainder(ids, 3)));
  // IDs up to 5 need a range of at least 6.
  auto small = test::make_scheme("{name: sinusoidal, ids: task, randomized: 5}", ctx());
  CHECK_THROWS_WITH(small->position_ids(ids, 0, true),
                    Catch::Contains("raise the scheme's `randomized:`"));
  CHECK_NOTHROW(test::make_scheme("{name: sinusoidal, ids: task, randomized: 6}", ctx())
                    ->position_ids(ids, 0, true));
  CHECK_THROWS_WITH(test::make_scheme("{name: sinusoidal, randomized: -1}", ctx()),
                    Catch::Contains("randomized"));
}

TEST_CASE("randomized positions: an encoder-decoder's two sides share each sample's map",
          "[position]") {
  load_all_plugins();
  torch::manual_seed(2);
  auto s = test::make_scheme("{name: sinusoidal, ids: task, randomized: 100}", ctx());
  auto source = torch::arange(8).view({1, 1, 8}).expand({1, 4, 8}).contiguous();
  auto target = torch::arange(3, 11).view({1, 1, 8}).expand({1, 4, 8}).contiguous();
  auto [src, tgt] = s->position_ids_pair(source, target, /*training=*/true);
  // Source IDs 3..7 and target IDs 3..7 are the same positions: they map to the same values.
  CHECK(torch::equal(src.slice(2, 3, 8), tgt.slice(2, 0, 5)));
  CHECK((tgt.slice(2, 1) > tgt.slice(2, 0, 7)).all().item<bool>());
}

TEST_CASE(
    "randomized positions: a range the scheme's table cannot hold is refused when it is built",
    "[position]") {
  load_all_plugins();
  CHECK_NOTHROW(test::make_scheme("{name: ape, max_position: 40, randomized: 41}", ctx()));
  CHECK_THROWS_WITH(test::make_scheme("{name: ape, max_position: 40, randomized: 42}", ctx()),
                    Catch::Contains("randomized positions up to 41 do not fit"));
}
