// Abacus embeddings: one training offset per batch on digits only, none at evaluation, the
// table's limits, and the task's abacus indices end to end.
#include "helpers.h"

#include <set>

using lengen::test::make_scheme;
using lengen::test::make_task;

namespace {
lengen::SchemeContext ctx() {
  return lengen::test::small_scheme_context();
}

// Abacus indices of 57+48=501 (padded to the answer, reversed answer) for a batch of 3.
torch::Tensor indices() {
  auto task = make_task("{name: addition, pad_to: answer, position_ids: abacus}");
  auto ex = task->parse_query("57+48");
  auto row = torch::tensor(ex.position_ids[0], torch::kInt64);  // 0 3 2 1 0 3 2 1 0 1 2 3 0
  return row.view({1, 1, -1}).expand({1, 3, row.size(0)}).contiguous();
}
}  // namespace

TEST_CASE("abacus: one offset k in [0, max_k] per batch, on digits only", "[abacus]") {
  auto s = make_scheme("{name: abacus, max_position: 40, max_k: 7}", ctx());
  const auto ids = indices();
  const auto digit = ids.ne(0);
  std::set<int64_t> ks;
  torch::manual_seed(3);
  for (int r = 0; r < 300; ++r) {
    auto out = s->position_ids(ids, 0, /*training=*/true);  // [1, 3, 13]
    auto shift = out - ids;
    CHECK(shift.masked_select(digit.logical_not()).eq(0).all().item<bool>());  // 0 stays 0
    const int64_t k = shift.masked_select(digit)[0].item<int64_t>();
    CHECK(shift.masked_select(digit).eq(k).all().item<bool>());  // the whole batch, one k
    ks.insert(k);
  }
  CHECK(ks.size() == 8);  // every k of 0..7 drawn
  CHECK(*ks.begin() == 0);
  CHECK(*ks.rbegin() == 7);
  // Evaluation: the indices as the task wrote them.
  CHECK(torch::equal(s->position_ids(ids, 0, false), ids));
}

TEST_CASE("abacus: the embedding is the table's row of each index", "[abacus]") {
  auto s = make_scheme("{name: abacus, max_position: 40, max_k: 7}", ctx());
  s->eval();
  auto table = s->named_parameters()["level0"];
  REQUIRE(table.sizes() == torch::IntArrayRef({41, 16}));
  const auto ids = indices();
  auto got = s->embed(s->position_ids(ids, 0, false));  // [3, 13, 16]
  CHECK(lengen::test::max_abs_diff(got[1][2], table[2]) == 0.0);
  CHECK(lengen::test::max_abs_diff(got[0][4], table[0]) == 0.0);  // `+`
}

TEST_CASE("abacus: limits name the option", "[abacus]") {
  CHECK_THROWS_WITH(make_scheme("{name: abacus, max_position: 10, max_k: 10}", ctx()),
                    Catch::Contains("max_k"));
  auto s = make_scheme("{name: abacus, max_position: 10, max_k: 8}", ctx());
  CHECK_THROWS_WITH(s->position_ids(indices(), 0, true),
                    Catch::Contains("needs max_position >= 11"));
  auto big = torch::full({1, 1, 2}, 11, torch::kInt64);
  CHECK_THROWS(s->check_ids(big));
}
