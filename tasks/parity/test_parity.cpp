// Parity task: the paper's worked example token for token and ID for ID, the answer, the
// scratchpad's running parity, the training range and the option refusals.
#include "helpers.h"

using lengen::test::ids_string;
using lengen::test::make_task;

TEST_CASE("parity: Cho et al. 2025 Fig. 2, 0101 with scratchpad 0110 and IDs 234512345",
          "[parity]") {
  auto task = make_task("{name: parity, scratchpad: true, position_ids: coupled}");
  auto ex = task->parse_query("0101");
  CHECK(task->render(ex.tokens) == "$0101=0110$");
  // The paper's 234512345 for `0101=0110`, then EOS 0; BOS 0 in front.
  CHECK(ids_string(ex) == "0 2 3 4 5 1 2 3 4 5 0");
  CHECK(ex.prompt_length == 6);
  CHECK(task->render({ex.tokens.begin() + ex.answer_begin, ex.tokens.end()}) == "0$");
  std::vector<uint8_t> mask{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
  CHECK(ex.loss_mask == mask);
  CHECK(task->max_response_length({ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length}) == 5);
}

TEST_CASE("parity: without scratchpad the response is the answer bit", "[parity]") {
  auto task = make_task("{name: parity}");
  CHECK(task->render(task->parse_query("0101").tokens) == "$0101=0$");
  CHECK(task->render(task->parse_query("0111").tokens) == "$0111=1$");
  auto ex = task->parse_query("1");
  CHECK(task->render(ex.tokens) == "$1=1$");
  CHECK(ids_string(ex) == "0 1 2 3 4");  // sequential
  CHECK(ex.answer_begin == 3);
}

TEST_CASE("parity: every scratchpad bit is the parity of the prefix; the last is the answer",
          "[parity]") {
  auto task =
      make_task("{name: parity, scratchpad: true, position_ids: coupled, train_bits: [1, 40]}");
  lengen::Rng rng(11);
  for (int i = 0; i < 200; ++i) {
    auto ex = task->sample_train(rng);
    const int64_t n = ex.meta.at("bits");
    REQUIRE(ex.length() == 1 + n + 1 + n + 1);
    int p = 0;
    for (int64_t k = 0; k < n; ++k) {
      p ^= ex.tokens[1 + k] == task->vocabulary().id("1") ? 1 : 0;
      CHECK(ex.tokens[ex.prompt_length + k] == task->vocabulary().id(p ? "1" : "0"));
      // Coupling: the k-th query bit and the k-th scratchpad bit share an ID.
      CHECK(ex.position_ids[0][1 + k] == ex.position_ids[0][ex.prompt_length + k]);
    }
    CHECK(ex.answer_begin == ex.length() - 2);
  }
}

TEST_CASE("parity: training lengths stay in [lo, hi]; grid cells are exact", "[parity]") {
  auto task = make_task("{name: parity, train_bits: [3, 6], eval_bits: [1, 50]}");
  auto axes = task->grid_axes();
  REQUIRE(axes.size() == 1);
  CHECK(axes[0].name == "bits");
  CHECK(axes[0].hi == 50);
  CHECK(axes[0].train_hi == 6);
  lengen::Rng rng(2);
  std::set<int64_t> seen;
  int ones = 0;
  for (int i = 0; i < 400; ++i) {
    auto ex = task->sample_train(rng);
    seen.insert(ex.meta.at("bits"));
    ones += ex.tokens[ex.answer_begin] == task->vocabulary().id("1") ? 1 : 0;
  }
  CHECK(seen == std::set<int64_t>{3, 4, 5, 6});
  CHECK(ones > 150);  // answers are balanced: chance is 50%
  CHECK(ones < 250);
  CHECK(task->sample_eval({{"bits", 37}}, rng).meta.at("bits") == 37);
}

TEST_CASE("parity: causal IDs follow the generated bits, not the reference", "[parity]") {
  auto task = make_task("{name: parity, scratchpad: true, position_ids: coupled}");
  auto ex = task->parse_query("110");
  auto toks = ex.tokens;
  toks.insert(toks.begin() + ex.prompt_length + 1, task->vocabulary().id("1"));  // one extra bit
  auto ids = task->causal_position_ids(toks, ex.prompt_length);
  CHECK(ids[0][ex.prompt_length + 3] == 5);  // the 4th generated bit gets s + 4
}

TEST_CASE("parity: invalid options and queries fail with names", "[parity]") {
  CHECK_THROWS_WITH(make_task("{name: parity, position_ids: coupled}"),
                    Catch::Contains("scratchpad: true"));
  CHECK_THROWS_WITH(make_task("{name: parity, train_bits: [9, 2]}"), Catch::Contains("lo <= hi"));
  auto task = make_task("{name: parity}");
  CHECK_THROWS_WITH(task->parse_query("0121"), Catch::Contains("string of 0s and 1s"));
  lengen::Rng rng(1);
  CHECK_THROWS_WITH(task->sample_eval({{"bits", 0}}, rng), Catch::Contains("bits must be >= 1"));
}
