// Addition task: the papers' worked examples, token for token and ID for ID.
#include "helpers.h"

using lengen::test::make_task;

namespace {

std::string ids_string(const lengen::Example& e, size_t level = 0) {
  std::string s;
  for (int64_t v : e.position_ids[level]) {
    s += (s.empty() ? "" : " ") + std::to_string(v);
  }
  return s;
}

}  // namespace

TEST_CASE("addition: Cho et al. worked examples", "[addition]") {
  SECTION("pad every number to the answer length (Cho et al. 2025 convention): 057+048=501") {
    auto task = make_task("{name: addition, pad_to: answer}");
    auto ex = task->parse_query("57+48");
    CHECK(task->render(ex.tokens) == "$057+048=501$");
    // tasks.md 1.4: IDs 4 3 2 1 4 3 2 1 2 3 4 0 (BOS and EOS 0).
    CHECK(ids_string(ex) == "0 4 3 2 1 4 3 2 1 2 3 4 0");
  }
  SECTION("pad operands to the longer operand, answer to L+1 (Cho et al. 2024): 57+48=501") {
    auto task = make_task("{name: addition, pad_to: operand}");
    auto ex = task->parse_query("57+48");
    CHECK(task->render(ex.tokens) == "$57+48=501$");
    CHECK(ids_string(ex) == "0 3 2 1 3 2 1 2 3 4 0");
  }
  SECTION("three operands without scratchpad: 057+048+096=102 with IDs 4321 4321 4321 234") {
    auto task = make_task("{name: addition, operands: 3, pad_to: answer}");
    auto ex = task->parse_query("57+48+96");
    CHECK(task->render(ex.tokens) == "$057+048+096=102$");
    CHECK(ids_string(ex) == "0 4 3 2 1 4 3 2 1 4 3 2 1 2 3 4 0");
  }
  SECTION("unequal lengths and no padding keep significance coupling") {
    auto task = make_task("{name: addition, zero_pad: false}");
    auto ex = task->parse_query("5+48");
    CHECK(task->render(ex.tokens) == "$5+48=35$");
    CHECK(ids_string(ex) == "0 2 1 3 2 1 2 3 0");
  }
  SECTION("plain (most significant first) padded answer") {
    auto task = make_task("{name: addition, reverse_output: false}");
    auto ex = task->parse_query("57+48");
    CHECK(task->render(ex.tokens) == "$57+48=105$");
    CHECK(ids_string(ex) == "0 3 2 1 3 2 1 4 3 2 0");
  }
  SECTION("sequential IDs") {
    auto task = make_task("{name: addition, position_ids: sequential}");
    auto ex = task->parse_query("57+48");
    CHECK(ids_string(ex) == "0 1 2 3 4 5 6 7 8 9 10");
  }
}

TEST_CASE("addition: loss mask covers the response and EOS only", "[addition]") {
  auto task = make_task("{name: addition}");
  auto ex = task->parse_query("9+9");  // $9+9=81$
  REQUIRE(task->render(ex.tokens) == "$9+9=81$");
  CHECK(ex.prompt_length == 5);
  std::vector<uint8_t> expect{0, 0, 0, 0, 0, 1, 1, 1};
  CHECK(ex.loss_mask == expect);
}

TEST_CASE("addition: sums are exact for long operands", "[addition]") {
  auto task = make_task("{name: addition, pad_to: operand}");
  auto ex = task->parse_query("99999999999999999999999999999+1");
  // Reversed, padded to 30 digits: 1 followed by 29 zeros, reversed.
  std::string answer = task->render(ex.response());
  CHECK(answer == std::string(29, '0') + "1$");
}

TEST_CASE("addition: training lengths stay in range; evaluation lengths are exact", "[addition]") {
  auto task = make_task("{name: addition, train_digits: [2, 4]}");
  lengen::Rng rng(7);
  std::set<int64_t> seen;
  for (int i = 0; i < 500; ++i) {
    auto ex = task->sample_train(rng);
    seen.insert(ex.meta.at("digits"));
  }
  CHECK(seen == std::set<int64_t>{2, 3, 4});
  auto ex = task->sample_eval({{"digits", 17}}, rng);
  // Two 17-digit operands, padded to 17, + '=' BOS: 1 + 17 + 1 + 17 + 1 = 37 prompt tokens.
  CHECK(ex.prompt_length == 37);
  CHECK(ex.tokens[1] != task->vocabulary().id("0"));  // exactly 17 digits: no leading zero
}

TEST_CASE("addition: invalid options and queries fail with names", "[addition]") {
  CHECK_THROWS_WITH(make_task("{name: addition, reverse_output: false, zero_pad: false}"),
                    Catch::Contains("leak the answer"));
  CHECK_THROWS_WITH(make_task("{name: addition, pad_to: answr}"),
                    Catch::Contains("did you mean 'answer'"));
  CHECK_THROWS_WITH(make_task("{name: addition, train_digits: [5, 2]}"),
                    Catch::Contains("lo <= hi"));
  auto task = make_task("{name: addition}");
  CHECK_THROWS_WITH(task->parse_query("12+x"), Catch::Contains("not a query like 57+48"));
  CHECK_THROWS_WITH(task->parse_query("1+2+3"), Catch::Contains("configured for 2"));
  lengen::Rng rng(1);
  CHECK_THROWS_WITH(task->sample_eval({{"digits", 0}}, rng), Catch::Contains("digits must be >= 1"));
}
