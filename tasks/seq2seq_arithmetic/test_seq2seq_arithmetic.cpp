// seq2seq_arithmetic (Duan & Shi 2023's encoder-decoder formats): the paper's examples token
// for token, the interleaved input of A.4, significance IDs, the permutation split, refusals.
#include "helpers.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

using lengen::test::make_task;

namespace {

std::string source(const lengen::Task& t, const std::string& q) {
  return t.render(t.to_seq2seq(t.parse_query(q)).source);
}

std::string target(const lengen::Task& t, const std::string& q) {
  return t.render(t.to_seq2seq(t.parse_query(q)).target);
}

}  // namespace

TEST_CASE("seq2seq_arithmetic: the paper's examples (section 3.2, A.3, A.4)",
          "[seq2seq_arithmetic]") {
  // 0123+0748 -> 1780: operands zero-padded to the fixed width, the output reversed.
  auto add = make_task(
      "{name: seq2seq_arithmetic, operation: addition, width: 4, eval_digits: [1, 3], train_max: "
      "9}");
  CHECK(source(*add, "123+748") == "0123+0748");
  CHECK(target(*add, "123+748") == "$1780&");
  // The paper's 15 tokens.
  CHECK(add->vocabulary().size() == 15);
  for (const char* t : {"0", "9", "+", "*", "$", "&", "@"})
    CHECK(add->vocabulary().contains(t));
  // Successor, A.3: 03611451449241919819 -> 03611451449241919820 (shown un-reversed there).
  auto succ = make_task(
      "{name: seq2seq_arithmetic, operation: successor, width: 20, eval_digits: [1, 19]}");
  CHECK(source(*succ, "03611451449241919819") == "03611451449241919819");
  std::string want = "03611451449241919820";
  std::reverse(want.begin(), want.end());
  CHECK(target(*succ, "3611451449241919819") == "$" + want + "&");
  // N x 1, A.4: 0123*6 (natural) and its interleaving `* a b a b ...`.
  auto nx1 = make_task(
      "{name: seq2seq_arithmetic, operation: nx1, width: 4, eval_digits: [1, 3], train_max: 9}");
  CHECK(source(*nx1, "123*6") == "0123*6");
  CHECK(target(*nx1, "123*6") == "$8370&");  // 738
  auto nx1i = make_task(
      "{name: seq2seq_arithmetic, operation: nx1, width: 4, interleave: true, eval_digits: [1, 3], "
      "train_max: 9}");
  CHECK(source(*nx1i, "123*6") == "*06162636");
  // Addition interleaved: `+ a_n b_n ... a_1 b_1`.
  auto addi = make_task(
      "{name: seq2seq_arithmetic, operation: addition, width: 4, interleave: true, eval_digits: "
      "[1, 3], train_max: 9}");
  CHECK(source(*addi, "123+748") == "+00172438");
  CHECK(target(*addi, "123+748") == "$1780&");
  // Parity: input x_n .. x_1, y_1 = x_1, y_i = y_{i-1} xor x_i, emitted y_1 first.
  auto par = make_task(
      "{name: seq2seq_arithmetic, operation: parity, width: 6, eval_digits: [1, 6], train_max: 9}");
  CHECK(source(*par, "101101") == "101101");
  // x_1..x_6 = 1,0,1,1,0,1: running parity 1,1,0,1,1,0.
  CHECK(target(*par, "101101") == "$110110&");
  CHECK(target(*par, "110") ==
        "$010000&");  // padded 000110: x_1 = 0, x_2 = 1, x_3 = 1, zeros keep 0
}

TEST_CASE("seq2seq_arithmetic: IDs are significances on both sides", "[seq2seq_arithmetic]") {
  auto add = make_task(
      "{name: seq2seq_arithmetic, operation: addition, width: 3, eval_digits: [1, 2], train_max: "
      "9}");
  auto sx = add->to_seq2seq(add->parse_query("12+34"));
  // 012+034: a_3 a_2 a_1 + b_3 b_2 b_1.
  CHECK(sx.source_ids == lengen::PositionIds{{3, 2, 1, 0, 3, 2, 1}});
  // $ y_1 y_2 y_3 &: the token predicting y_r has ID r.
  CHECK(sx.target_ids == lengen::PositionIds{{1, 2, 3, 4, 5}});
  CHECK(sx.loss_mask == std::vector<uint8_t>{0, 1, 1, 1, 1});
  auto addi = make_task(
      "{name: seq2seq_arithmetic, operation: addition, width: 3, interleave: true, eval_digits: "
      "[1, 2], train_max: 9}");
  CHECK(addi->to_seq2seq(addi->parse_query("12+34")).source_ids ==
        lengen::PositionIds{{4, 3, 3, 2, 2, 1, 1}});
  auto nx1 = make_task(
      "{name: seq2seq_arithmetic, operation: nx1, width: 3, eval_digits: [1, 2], train_max: 9}");
  CHECK(nx1->to_seq2seq(nx1->parse_query("12*3")).source_ids ==
        lengen::PositionIds{{3, 2, 1, 0, 1}});
  // The one-sequence IDs are what causal_position_ids gives (the contract test checks all).
  auto ex = add->parse_query("12+34");
  CHECK(add->causal_position_ids(ex.tokens, ex.prompt_length) == ex.position_ids);
}

TEST_CASE("seq2seq_arithmetic: training numbers come from 7/8 of a permutation of [0, train_max]",
          "[seq2seq_arithmetic]") {
  auto t = make_task(
      "{name: seq2seq_arithmetic, operation: successor, train_max: 63, width: 3, eval_digits: [1, "
      "2]}");
  lengen::Rng rng(1);
  std::set<std::string> seen;
  for (int i = 0; i < 4000; ++i)
    seen.insert(t->render(t->to_seq2seq(t->sample_train(rng)).source));
  // 64 numbers, 56 in the training part: all of them appear, none of the other 8.
  CHECK(seen.size() == 56);
  auto other = make_task(
      "{name: seq2seq_arithmetic, operation: successor, train_max: 63, width: 3, split_seed: 1, "
      "eval_digits: [1, 2]}");
  std::set<std::string> seen1;
  for (int i = 0; i < 4000; ++i)
    seen1.insert(other->render(other->to_seq2seq(other->sample_train(rng)).source));
  CHECK(seen1.size() == 56);
  CHECK(seen1 != seen);  // another split
  // train_lengths: digits draws the length first: 1, 2 and 3 digits each about a third of the
  // time where the numbers' own distribution gives 3 digits 90% (900 of 1000), and from the
  // same training part (every number it draws is one of the default's 875).
  auto count = [&](const std::string& lengths, int samples, std::set<std::string>& numbers) {
    auto add = make_task(
        "{name: seq2seq_arithmetic, operation: addition, train_max: 999, width: 4, "
        "eval_digits: [1, 3], train_lengths: " +
        lengths + "}");
    std::map<size_t, int> by_length;
    for (int i = 0; i < samples; ++i) {
      const std::string src =
          add->render(add->to_seq2seq(add->sample_train(rng)).source);  // 0aaa+0bbb
      const std::string a = src.substr(0, 4);
      const size_t first = a.find_first_not_of('0');
      const std::string digits = first == std::string::npos ? "0" : a.substr(first);
      numbers.insert(digits);
      by_length[digits.size()] += 1;
    }
    return by_length;
  };
  std::set<std::string> by_numbers, by_digits;
  auto numbers = count("numbers", 60000, by_numbers);  // every training number, about 69 times
  auto lengths = count("digits", 6000, by_digits);
  CHECK(by_numbers.size() == 875);  // 7/8 of [0, 999]
  CHECK(numbers[3] > 50000);
  for (size_t len : {1, 2, 3})
    CHECK(std::abs(lengths[len] - 2000) < 200);
  CHECK(std::includes(by_numbers.begin(), by_numbers.end(), by_digits.begin(), by_digits.end()));
  // Evaluation operands have exactly L digits; the response is right.
  auto add = make_task("{name: seq2seq_arithmetic, operation: addition, eval_digits: [1, 20]}");
  for (int i = 0; i < 50; ++i) {
    auto ex = add->sample_eval({{"digits", 20}}, rng);
    auto sx = add->to_seq2seq(ex);
    REQUIRE(sx.source.size() == 2 * 21 + 1);  // width 21 = 20 + headroom
    CHECK(add->vocabulary().token(sx.source[0]) == "0");
    CHECK(add->vocabulary().token(sx.source[1]) != "0");
    CHECK(add->exact_match(ex, ex.response()));
  }
}

TEST_CASE("seq2seq_arithmetic: markers wrap the source as the released code's SOS + digits + EOS",
          "[seq2seq_arithmetic]") {
  auto succ = make_task(
      "{name: seq2seq_arithmetic, operation: successor, width: 4, markers: true, eval_digits: [1, "
      "3], train_max: 9}");
  CHECK(source(*succ, "123") == "$0123&");
  CHECK(target(*succ, "123") == "$4210&");  // the target is unchanged
  auto sx = succ->to_seq2seq(succ->parse_query("123"));
  // SOS before x_4 takes ID W + 1, EOS after x_1 takes 0: with the released code's band
  // (IDs r - 1 .. r for row r, w = 1) the first row sees EOS and x_1, the row predicting the
  // end token (ID W + 1) sees x_W and SOS.
  CHECK(sx.source_ids == lengen::PositionIds{{5, 4, 3, 2, 1, 0}});
  CHECK(sx.target_ids == lengen::PositionIds{{1, 2, 3, 4, 5, 6}});
  auto ex = succ->parse_query("123");
  CHECK(succ->causal_position_ids(ex.tokens, ex.prompt_length) == ex.position_ids);
  lengen::Rng rng(3);
  CHECK(succ->to_seq2seq(succ->sample_train(rng)).source.size() == 6);
  // Every operation takes them; the interleaved operator keeps its ID.
  auto addi = make_task(
      "{name: seq2seq_arithmetic, operation: addition, width: 3, interleave: true, markers: true, "
      "eval_digits: [1, 2], train_max: 9}");
  CHECK(source(*addi, "12+34") == "$+001324&");
  CHECK(addi->to_seq2seq(addi->parse_query("12+34")).source_ids ==
        lengen::PositionIds{{4, 4, 3, 3, 2, 2, 1, 1, 0}});
  auto par = make_task(
      "{name: seq2seq_arithmetic, operation: parity, width: 6, markers: true, eval_digits: [1, 6], "
      "train_max: 9}");
  CHECK(source(*par, "101101") == "$101101&");
  CHECK(target(*par, "101101") == "$110110&");
}

TEST_CASE("seq2seq_arithmetic: refusals name the option", "[seq2seq_arithmetic]") {
  CHECK_THROWS_WITH(
      make_task("{name: seq2seq_arithmetic, operation: addition, width: 5, eval_digits: [1, 5]}"),
      Catch::Contains("task.width") || Catch::Contains("width"));
  // Interleaving needs two operands: successor is unchanged by it.
  auto succ = make_task(
      "{name: seq2seq_arithmetic, operation: successor, interleave: true, width: 4, eval_digits: "
      "[1, 3], train_max: 9}");
  CHECK(source(*succ, "123") == "0123");
  auto t = make_task(
      "{name: seq2seq_arithmetic, operation: addition, width: 8, eval_digits: [1, 7], train_max: "
      "9}");
  lengen::Rng rng(0);
  CHECK_THROWS_WITH(t->sample_eval({{"digits", 8}}, rng), Catch::Contains("task.width"));
  CHECK_THROWS_WITH(t->parse_query("12-3"), Catch::Contains("123+748"));
}
