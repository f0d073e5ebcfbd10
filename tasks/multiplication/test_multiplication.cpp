// Multiplication task: the paper's worked examples token for token and ID for ID (tasks.md
// 1.6-1.7), the arithmetic of both stages on random operands, S_M / T_M, option refusals.
#include "helpers.h"

using lengen::test::ids_string;
using lengen::test::make_task;

namespace {

// Reads a run of digit tokens [begin, end) as a decimal string in written order.
std::string digits(const lengen::Task& task,
                   const lengen::Example& ex,
                   int64_t begin,
                   int64_t end) {
  return task.render({ex.tokens.begin() + begin, ex.tokens.begin() + end});
}

}  // namespace

TEST_CASE("multiplication: Cho et al. 2025 Fig. 8, 37*925 with the two-stage scratchpad",
          "[multiplication]") {
  auto task = make_task("{name: multiplication, scratchpad: true}");
  REQUIRE(task->position_levels() == 3);
  auto ex = task->parse_query("37*925");
  CHECK(task->render(ex.tokens) == "$37*925=581+470+333=58100>52900>52243$");
  // tasks.md 1.6, with BOS 0 in front (PosID1 and PosID3 are the seed's strings exactly).
  CHECK(ids_string(ex, 0) ==
        "0 3 2 0 0 0 0 1 2 3 4 1 2 3 4 1 2 3 4 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0");
  CHECK(ids_string(ex, 1) ==
        "0 0 0 0 3 2 1 1 1 1 1 2 2 2 2 3 3 3 3 1 1 1 1 1 1 2 2 2 2 2 2 3 3 3 3 3 3 0");
  CHECK(ids_string(ex, 2) ==
        "0 0 0 0 0 0 0 1 2 3 4 2 3 4 5 3 4 5 6 1 2 3 4 5 6 1 2 3 4 5 6 1 2 3 4 5 6 0");
  // The prompt ends at the first `=`; the second `=` is a response token the model predicts.
  CHECK(ex.prompt_length == 8);
  for (int64_t t = 0; t < ex.length(); ++t)
    CHECK(ex.loss_mask[t] == (t >= 8 ? 1 : 0));
  CHECK(task->render({ex.tokens.begin() + ex.answer_begin, ex.tokens.end()}) == "52243$");
  CHECK(task->max_response_length({ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length}) ==
        ex.length() - ex.prompt_length);
  CHECK(task->causal_position_ids(ex.tokens, ex.prompt_length) == ex.position_ids);
}

TEST_CASE("multiplication: without scratchpad, 37*925=52243 with single-level coupling",
          "[multiplication]") {
  auto task = make_task("{name: multiplication}");
  REQUIRE(task->position_levels() == 1);
  auto ex = task->parse_query("37 x 925 =");
  CHECK(task->render(ex.tokens) == "$37*925=52243$");  // 34225, 5 = M+N digits, reversed
  CHECK(ids_string(ex) == "0 3 2 1 4 3 2 1 2 3 4 5 6 0");
  // Padded to M+N digits even when the product is shorter: 2*3 = 06 -> "60".
  CHECK(task->render(task->parse_query("2*3").tokens) == "$2*3=60$");
  auto plain = make_task("{name: multiplication, reverse_output: false}");
  auto p = plain->parse_query("37*925");
  CHECK(plain->render(p.tokens) == "$37*925=34225$");
  CHECK(ids_string(p) == "0 3 2 1 4 3 2 1 6 5 4 3 2 0");
  auto unpadded = make_task("{name: multiplication, zero_pad: false}");
  CHECK(unpadded->render(unpadded->parse_query("2*3").tokens) == "$2*3=6$");
  auto seq = make_task("{name: multiplication, position_ids: sequential, scratchpad: true}");
  CHECK(seq->position_levels() == 1);
  CHECK(seq->parse_query("37*925").position_ids[0][5] == 5);
}

TEST_CASE("multiplication: both stages hold the partial products of random operands",
          "[multiplication]") {
  auto task = make_task(
      "{name: multiplication, scratchpad: true, train_a_digits: [1, 12], train_b_digits: [1, 9]}");
  lengen::Rng rng(21);
  for (int i = 0; i < 200; ++i) {
    auto ex = task->sample_train(rng);
    const int64_t M = ex.meta.at("a_digits"), N = ex.meta.at("b_digits");
    const std::string q = digits(*task, ex, 1, ex.prompt_length - 1);
    const std::string a = q.substr(0, q.find('*')), b = q.substr(q.find('*') + 1);
    REQUIRE(static_cast<int64_t>(a.size()) == M);
    REQUIRE(static_cast<int64_t>(b.size()) == N);
    // Stage 1: N numbers of M+1 digits; stage 2: N numbers of M+N digits.
    const std::string resp = digits(*task, ex, ex.prompt_length, ex.length() - 1);
    const size_t eq = resp.find('=');
    REQUIRE(eq != std::string::npos);
    const std::string stage1 = resp.substr(0, eq), stage2 = resp.substr(eq + 1);
    CHECK(static_cast<int64_t>(std::count(stage1.begin(), stage1.end(), '+')) == N - 1);
    CHECK(static_cast<int64_t>(std::count(stage2.begin(), stage2.end(), '>')) == N - 1);
    CHECK(static_cast<int64_t>(stage1.size()) == N * (M + 1) + N - 1);
    CHECK(static_cast<int64_t>(stage2.size()) == N * (M + N) + N - 1);
    // The last stage-2 number, read backwards, is A*B (checked in 64-bit arithmetic).
    if (M + N <= 18) {
      std::string last = stage2.substr(stage2.size() - static_cast<size_t>(M + N));
      std::reverse(last.begin(), last.end());
      CHECK(std::stoull(last) == std::stoull(a) * std::stoull(b));
      // The k-th stage-1 number is A times the k-th least significant digit of B.
      std::string first = stage1.substr(0, static_cast<size_t>(M + 1));
      std::reverse(first.begin(), first.end());
      CHECK(std::stoull(first) == std::stoull(a) * static_cast<unsigned long long>(b.back() - '0'));
    }
    CHECK(task->causal_position_ids(ex.tokens, ex.prompt_length) == ex.position_ids);
  }
}

TEST_CASE("multiplication: S_M(n, m) lengths and T_M cells", "[multiplication]") {
  auto task = make_task(
      "{name: multiplication, scratchpad: true, train_a_digits: [1, 4], train_b_digits: [2, 3]}");
  auto axes = task->grid_axes();
  REQUIRE(axes.size() == 2);
  CHECK(axes[0].name == "a_digits");
  CHECK(axes[1].name == "b_digits");
  CHECK(axes[0].hi == 30);
  CHECK(axes[1].train_lo == 2);
  CHECK(axes[1].train_hi == 3);
  lengen::Rng rng(8);
  std::set<int64_t> as, bs;
  for (int i = 0; i < 300; ++i) {
    auto ex = task->sample_train(rng);
    as.insert(ex.meta.at("a_digits"));
    bs.insert(ex.meta.at("b_digits"));
  }
  CHECK(as == std::set<int64_t>{1, 2, 3, 4});
  CHECK(bs == std::set<int64_t>{2, 3});
  // The largest T_M cell: 30 x 30. IDs stay within Table 3's max_pos (64, 32, 64) at start 1.
  auto ex = task->sample_eval({{"a_digits", 30}, {"b_digits", 30}}, rng);
  CHECK(ex.meta.at("a_digits") == 30);
  CHECK(ex.tokens[1] != task->vocabulary().id("0"));
  CHECK(ex.length() - ex.prompt_length == 30 * 31 + 29 + 1 + 30 * 60 + 29 + 1);
  CHECK(*std::max_element(ex.position_ids[0].begin(), ex.position_ids[0].end()) == 32);
  CHECK(*std::max_element(ex.position_ids[1].begin(), ex.position_ids[1].end()) == 30);
  CHECK(*std::max_element(ex.position_ids[2].begin(), ex.position_ids[2].end()) == 61);
}

TEST_CASE("multiplication: causal IDs follow the generated scratchpad", "[multiplication]") {
  auto task = make_task("{name: multiplication, scratchpad: true}");
  auto ex = task->parse_query("37*925");
  auto toks = ex.tokens;
  // The model closes stage 1 early: "=581=" ... the tokens after it are stage 2.
  toks[ex.prompt_length + 3] = task->vocabulary().id("=");
  auto ids = task->causal_position_ids(toks, ex.prompt_length);
  const auto t = ex.prompt_length + 4;  // first digit after the early `=`
  CHECK(ids[0][t] == 0);
  CHECK(ids[1][t] == 1);
  CHECK(ids[2][t] == 2);
}

TEST_CASE("multiplication: invalid options and queries fail with names", "[multiplication]") {
  CHECK_THROWS_WITH(make_task("{name: multiplication, scratchpad: true, zero_pad: false}"),
                    Catch::Contains("zero_pad: true"));
  CHECK_THROWS_WITH(make_task("{name: multiplication, reverse_output: false, zero_pad: false}"),
                    Catch::Contains("leak the answer"));
  CHECK_THROWS_WITH(make_task("{name: multiplication, train_b_digits: [3, 1]}"),
                    Catch::Contains("lo <= hi"));
  auto task = make_task("{name: multiplication}");
  CHECK_THROWS_WITH(task->parse_query("12+3"), Catch::Contains("not a query like 37*925"));
  CHECK_THROWS_WITH(task->parse_query("12*"), Catch::Contains("not a query like 37*925"));
  lengen::Rng rng(1);
  CHECK_THROWS_WITH(task->sample_eval({{"a_digits", 3}}, rng), Catch::Contains("'b_digits'"));
}
