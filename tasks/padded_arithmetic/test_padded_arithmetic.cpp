// padded_arithmetic (Jelassi et al. 2023's encoding): the paper's examples token for token in
// the encoder layout, the fixed-set sampler, every operation, the carry counters, refusals.
#include "helpers.h"

#include "lengen/task/decimal.h"

#include <algorithm>
#include <set>

using lengen::test::make_task;

namespace {

// The encoder's input and labels (scored positions only) of a query, as text.
std::pair<std::string, std::string> labeled(const lengen::Task& task, const std::string& query) {
  auto lx = task.to_labeled(task.parse_query(query));
  std::vector<int64_t> labels;
  for (int64_t t = 0; t < lx.length(); ++t) {
    if (lx.label_mask[t])
      labels.push_back(lx.labels[t]);
  }
  return {task.render(lx.tokens), task.render(labels)};
}

}  // namespace

TEST_CASE("padded_arithmetic: the paper's section 2.1 example, n_train 2 and n_test 3",
          "[padded_arithmetic]") {
  auto task = make_task("{name: padded_arithmetic, width: 3, train_digits: 2}");
  auto [x, y] = labeled(*task, "12+39");
  CHECK(x == "1 2 <PAD> + 3 9 <PAD>");
  CHECK(y == "5 1 <PAD> <PAD>");  // n_out = n_test + 1 = 4 (the spec's resolution of the 3-token y)
  std::tie(x, y) = labeled(*task, "999+345");
  CHECK(x == "9 9 9 + 3 4 5");
  CHECK(y == "1 3 4 4");
  // The labels sit on the first n_out input positions, IDs 0..2w; EOS is not predicted.
  auto ex = task->parse_query("999+345");
  auto lx = task->to_labeled(ex);
  REQUIRE(lx.length() == 7);
  CHECK(lx.slot_begin == 0);
  CHECK(lx.ids == lengen::PositionIds{{0, 1, 2, 3, 4, 5, 6}});
  CHECK(lx.label_mask == std::vector<uint8_t>{1, 1, 1, 1, 0, 0, 0});
  CHECK(task->from_labeled(lx, lx.labels) == ex.response());
  // As one sequence: `$ x1 + x2 = y $`.
  CHECK(task->render(task->parse_query("12+39").tokens) ==
        "$ 1 2 <PAD> + 3 9 <PAD> = 5 1 <PAD> <PAD> $");
  // The paper's vocabulary: 0-9, +, %, x, *, <PAD> (plus =, $ and the batch filler _).
  for (const char* t : {"0", "9", "+", "%", "×", "*", "<PAD>"}) {
    CHECK(task->vocabulary().contains(t));
  }
  CHECK(task->vocabulary().size() == 18);
}

TEST_CASE("padded_arithmetic: a wrong digit anywhere in the answer is a wrong response",
          "[padded_arithmetic]") {
  auto task = make_task("{name: padded_arithmetic, width: 3, train_digits: 2}");
  auto ex = task->parse_query("999+345");
  auto lx = task->to_labeled(ex);
  auto predicted = lx.labels;
  predicted[3] = task->vocabulary().id("<PAD>");  // 134<PAD> instead of 1344
  CHECK(!task->exact_match(ex, task->from_labeled(lx, predicted)));
  predicted = lx.labels;
  predicted[6] = task->vocabulary().id("7");  // unscored positions do not matter
  CHECK(task->exact_match(ex, task->from_labeled(lx, predicted)));
}

TEST_CASE("padded_arithmetic: multiplication N x 3, 535 x 257 = 137495", "[padded_arithmetic]") {
  auto task = make_task("{name: padded_arithmetic, operation: mul, width: 3, train_digits: 2}");
  auto [x, y] = labeled(*task, "535×257");
  CHECK(x == "5 3 5 × 2 5 7");
  CHECK(y == "1 3 7 4 9 5");  // n_out = 2 n_test
  CHECK(labeled(*task, "12x7").second == "8 4 <PAD> <PAD> <PAD> <PAD>");
  // Training: the second operand stays below 10^3; the default width is 35.
  auto def = make_task("{name: padded_arithmetic, operation: mul}");
  lengen::Rng rng(3);
  for (int i = 0; i < 200; ++i) {
    auto ex = def->sample_train(rng);
    CHECK(ex.prompt_length == 1 + 35 + 1 + 35 + 1);
    CHECK(ex.length() == ex.prompt_length + 70 + 1);
    const auto& tok = ex.tokens;
    CHECK(tok[1 + 35 + 1 + 3] == def->vocabulary().id("<PAD>"));  // x2 has at most 3 digits
  }
  // A 35-digit test operand times a 3-digit one, against the decimal helper.
  lengen::GridCell cell{{"digits", 35}};
  auto ex = def->sample_eval(cell, rng);
  CHECK(ex.meta.at("digits") == 35);
}

TEST_CASE("padded_arithmetic: modular and element-wise operations", "[padded_arithmetic]") {
  auto add = make_task("{name: padded_arithmetic, operation: mod_add, modulus: 100, width: 5}");
  CHECK(labeled(*add, "99%35").first == "9 9 <PAD> <PAD> <PAD> % 3 5 <PAD> <PAD> <PAD>");
  CHECK(labeled(*add, "99%35").second == "3 4");  // 134 mod 100; n_out = digits of c - 1
  CHECK(labeled(*add, "50%50").second == "0 <PAD>");
  auto mul = make_task("{name: padded_arithmetic, operation: mod_mul, modulus: 1000, width: 5}");
  CHECK(labeled(*mul, "12345*678").second == "9 1 0");  // 8369910 mod 1000
  auto m101 = make_task("{name: padded_arithmetic, operation: mod_mul, modulus: 101, width: 5}");
  CHECK(labeled(*m101, "100*100").second == "1 <PAD> <PAD>");  // (-1)^2
  auto ew =
      make_task("{name: padded_arithmetic, operation: elementwise_add, width: 3, train_digits: 2}");
  // The paper's examples: 99 (+) 35 = 24, 99 (+) 45 = 34; n_out = width.
  CHECK(labeled(*ew, "99+35").second == "2 4 <PAD>");
  CHECK(labeled(*ew, "99+45").second == "3 4 <PAD>");
  CHECK(labeled(*ew, "905+105").second == "0 <PAD> <PAD>");  // digit-wise 0 0 0: the number 0
}

TEST_CASE("padded_arithmetic: first operands from a fixed set, second operands fresh",
          "[padded_arithmetic]") {
  auto task = make_task("{name: padded_arithmetic, width: 6, train_set_size: 20}");
  lengen::Rng rng(7);
  std::set<std::vector<int64_t>> firsts, seconds;
  for (int i = 0; i < 2000; ++i) {
    auto ex = task->sample_train(rng);
    firsts.emplace(ex.tokens.begin() + 1, ex.tokens.begin() + 7);
    seconds.emplace(ex.tokens.begin() + 8, ex.tokens.begin() + 14);
    CHECK(ex.tokens[1 + 5] == task->vocabulary().id("<PAD>"));  // 5 digits padded to 6
  }
  CHECK(firsts.size() == 20);
  CHECK(seconds.size() > 1900);
  // The set depends on train_set_seed only (not on the sampling stream).
  auto again = make_task("{name: padded_arithmetic, width: 6, train_set_size: 20}");
  lengen::Rng other(99);
  for (int i = 0; i < 200; ++i) {
    auto ex = again->sample_train(other);
    CHECK(firsts.count({ex.tokens.begin() + 1, ex.tokens.begin() + 7}) == 1);
  }
  auto reseeded =
      make_task("{name: padded_arithmetic, width: 6, train_set_size: 20, train_set_seed: 1}");
  int outside = 0;
  for (int i = 0; i < 200; ++i) {
    auto ex = reseeded->sample_train(other);
    outside += firsts.count({ex.tokens.begin() + 1, ex.tokens.begin() + 7}) == 0 ? 1 : 0;
  }
  CHECK(outside > 150);
  // train_set_size 0: every first operand fresh.
  auto fresh = make_task("{name: padded_arithmetic, width: 6, train_set_size: 0}");
  firsts.clear();
  for (int i = 0; i < 500; ++i) {
    auto ex = fresh->sample_train(rng);
    firsts.emplace(ex.tokens.begin() + 1, ex.tokens.begin() + 7);
  }
  CHECK(firsts.size() > 490);
}

TEST_CASE("padded_arithmetic: primer lengths as one value or a range", "[padded_arithmetic]") {
  auto task = make_task(
      "{name: padded_arithmetic, operation: mul, width: 35, train_digits: [6, 35], train_set_size: "
      "0}");
  lengen::Rng rng(1);
  std::set<int64_t> lengths;
  for (int i = 0; i < 3000; ++i) {
    lengths.insert(task->sample_train(rng).meta.at("digits"));
  }
  CHECK(*lengths.begin() >= 1);
  CHECK(*lengths.rbegin() == 35);
  CHECK(lengths.count(6) == 1);
  CHECK(lengths.size() >= 30);
}

TEST_CASE("padded_arithmetic: a length range balances the training operands' lengths",
          "[padded_arithmetic]") {
  // Uniform below 10^5 (the paper's sampler), 99% of pairs have a 5-digit operand and 2% are
  // two or more digits apart; train_digits [1, 5] draws each operand's length uniformly (the
  // first once, into the fixed set; the second every time), so about 1 pair in 3 reaches 5
  // digits and half are two or more digits apart.
  auto shares = [](const std::string& yaml) {
    auto task = make_task(yaml);
    lengen::Rng rng(5);
    const int n = 4000;
    int five = 0, apart = 0;
    std::set<int64_t> longest;
    for (int i = 0; i < n; ++i) {
      auto ex = task->sample_train(rng);
      five += ex.meta.at("digits") == 5 ? 1 : 0;
      apart += ex.meta.at("length_gap") >= 2 ? 1 : 0;
      longest.insert(ex.meta.at("digits"));
    }
    return std::make_tuple(double(five) / n, double(apart) / n, longest.size());
  };
  auto [five, apart, lengths] = shares("{name: padded_arithmetic, width: 20, train_digits: 5}");
  CHECK(five > 0.97);
  CHECK(apart < 0.05);
  std::tie(five, apart, lengths) =
      shares("{name: padded_arithmetic, width: 20, train_digits: [1, 5]}");
  CHECK(five > 0.28);
  CHECK(five < 0.42);
  CHECK(apart > 0.35);
  CHECK(apart < 0.55);
  CHECK(lengths == 5);
}

TEST_CASE("padded_arithmetic: paired_lengths draws both operands of a pair below 10^n for one n",
          "[padded_arithmetic]") {
  // One n a pair, uniform in 1-5, both operands below 10^n: the longer operand's length is
  // spread over 1-5 (about 1 pair in 5 reaches 5 digits, where the paper's sampler puts 99%
  // there) and operands two or more digits apart are rare (about 1%), where the independent
  // draw above puts about half there; the first operands still come from the fixed set.
  auto task =
      make_task("{name: padded_arithmetic, width: 20, train_digits: [1, 5], paired_lengths: true}");
  auto independent = make_task("{name: padded_arithmetic, width: 20, train_digits: [1, 5]}");
  lengen::Rng rng(5), set_rng(11);
  std::set<std::vector<int64_t>> set_values;
  for (int i = 0; i < 40000; ++i) {  // every one of the 5000 values, all but about 1 in 3000
    auto ex = independent->sample_train(set_rng);
    set_values.emplace(ex.tokens.begin() + 1, ex.tokens.begin() + 21);
  }
  const int n = 4000;
  int five = 0, apart = 0, in_set = 0;
  std::vector<int> longest(6, 0);
  for (int i = 0; i < n; ++i) {
    auto ex = task->sample_train(rng);
    five += ex.meta.at("digits") == 5 ? 1 : 0;
    apart += ex.meta.at("length_gap") >= 2 ? 1 : 0;
    ++longest[static_cast<size_t>(ex.meta.at("digits"))];
    in_set += set_values.count({ex.tokens.begin() + 1, ex.tokens.begin() + 21});
  }
  CHECK(double(five) / n > 0.15);
  CHECK(double(five) / n < 0.25);
  CHECK(double(apart) / n < 0.03);
  for (int d = 1; d <= 5; ++d)
    CHECK(longest[static_cast<size_t>(d)] > n / 8);
  CHECK(in_set > n * 0.97);  // the same fixed set (train_set_seed 0) as without pairing
  // Every length in the range needs values of its own in the set.
  CHECK_THROWS_WITH(
      make_task("{name: padded_arithmetic, width: 20, train_digits: [1, 5], paired_lengths: true, "
                "train_set_size: 3}"),
      Catch::Contains("train_set_size") && Catch::Contains("paired_lengths"));
}

TEST_CASE("padded_arithmetic: evaluation operands below 10^n, or of exactly n digits",
          "[padded_arithmetic]") {
  auto below = make_task("{name: padded_arithmetic, width: 8}");
  auto exact = make_task("{name: padded_arithmetic, width: 8, exact_digits: true}");
  lengen::Rng rng(2);
  int shorter = 0;
  for (int i = 0; i < 1000; ++i) {
    auto ex = below->sample_eval({{"digits", 6}}, rng);
    shorter += ex.tokens[6] == below->vocabulary().id("<PAD>") ? 1 : 0;  // x1 < 10^5
    auto ee = exact->sample_eval({{"digits", 6}}, rng);
    CHECK(ee.tokens[1] != exact->vocabulary().id("0"));
    CHECK(ee.tokens[6] != exact->vocabulary().id("<PAD>"));
    CHECK(ee.tokens[7] == exact->vocabulary().id("<PAD>"));
  }
  CHECK(shorter > 50);  // about 10%
  CHECK(shorter < 160);
  // exact_digits holds in training too (primers of exactly n digits), second operand included.
  auto primers = make_task(
      "{name: padded_arithmetic, operation: mul, width: 8, train_digits: 8, "
      "train_set_size: 0, exact_digits: true}");
  for (int i = 0; i < 300; ++i) {
    auto ex = primers->sample_train(rng);
    CHECK(ex.tokens[1] != primers->vocabulary().id("0"));
    CHECK(ex.tokens[8] != primers->vocabulary().id("<PAD>"));
    CHECK(ex.tokens[12] != primers->vocabulary().id("<PAD>"));  // x2 has exactly 3 digits
  }
}

TEST_CASE("padded_arithmetic: carries counted per example", "[padded_arithmetic]") {
  using lengen::decimal::carries;
  CHECK(carries({"999", "1"}).count == 3);
  CHECK(carries({"999", "1"}).longest_chain == 3);
  CHECK(carries({"5050", "5050"}).count == 2);
  CHECK(carries({"5050", "5050"}).longest_chain == 1);
  CHECK(carries({"1234", "8766"}).longest_chain == 4);
  CHECK(carries({"123", "456"}).count == 0);
  CHECK(carries({"19", "1", "9"}).count == 1);  // 9+1+9 = 19 carries, then 1+1+1 = 3 does not
  auto task = make_task("{name: padded_arithmetic, width: 5}");
  auto ex = task->parse_query("909+191");  // 9+1, 0+9+1, 9+1+1: three in a row
  CHECK(ex.meta.at("carries") == 3);
  CHECK(ex.meta.at("carry_chain") == 3);
  CHECK(ex.meta.at("length_gap") == 0);
  CHECK(ex.meta.at("carry_out") == 1);  // 1100: one digit more than 909
  ex = task->parse_query("15+15");
  CHECK(ex.meta.at("carries") == 1);
  CHECK(ex.meta.at("carry_chain") == 1);
  CHECK(ex.meta.at("carry_out") == 0);
  ex = task->parse_query("15+12345");  // misaligned: both numbers start at the left
  CHECK(ex.meta.at("length_gap") == 3);
  CHECK(ex.meta.at("carry_out") == 0);
  CHECK(task->parse_query("5+99999").meta.at("carry_out") == 1);
  // Property: the answer has a carry-out exactly when its first label past the longer operand
  // is a digit (the carry-out slot), not <PAD>.
  auto rev = make_task("{name: padded_arithmetic, width: 8, train_digits: [1, 5], reverse: true}");
  lengen::Rng rng(3);
  int with = 0;
  for (int i = 0; i < 400; ++i) {
    const auto ex = rev->sample_train(rng);
    const auto lx = rev->to_labeled(ex);
    std::vector<int64_t> labels;
    for (int64_t t = 0; t < lx.length(); ++t) {
      if (lx.label_mask[t])
        labels.push_back(lx.labels[t]);
    }
    const auto slot = static_cast<size_t>(ex.meta.at("digits"));
    REQUIRE(slot < labels.size());
    const bool digit = labels[slot] != rev->vocabulary().id("<PAD>");
    CHECK(digit == (ex.meta.at("carry_out") == 1));
    with += digit ? 1 : 0;
  }
  CHECK(with > 50);
  CHECK(with < 350);
}

TEST_CASE("padded_arithmetic: decimal helpers on long numbers", "[padded_arithmetic]") {
  namespace d = lengen::decimal;
  CHECK(d::add({"99999999999999999999", "1"}) == "100000000000000000000");
  CHECK(d::multiply("12345678901234567890123456789012345", "999") ==
        "12333333222333333322233333332223332655");
  CHECK(d::mod("12345678901234567890", 1000) == 890);
  CHECK(d::mod("12345678901234567890", 101) == 0);  // 101 divides it (Python says so)
  CHECK(d::mod("12345678901234567891", 101) == 1);
  CHECK(d::add_digitwise("99", "35") == "24");
}

TEST_CASE("padded_arithmetic: refusals name the option", "[padded_arithmetic]") {
  CHECK_THROWS_WITH(make_task("{name: padded_arithmetic, width: 4, train_digits: 5}"),
                    Catch::Contains("train_digits") && Catch::Contains("width"));
  CHECK_THROWS_WITH(
      make_task("{name: padded_arithmetic, width: 4, train_digits: 3, eval_digits: [1, 9]}"),
      Catch::Contains("eval_digits"));
  CHECK_THROWS_WITH(make_task("{name: padded_arithmetic, operation: sub}"),
                    Catch::Contains("operation"));
  auto task = make_task("{name: padded_arithmetic, width: 4, train_digits: 3}");
  lengen::Rng rng(0);
  CHECK_THROWS_WITH(task->sample_eval({{"digits", 5}}, rng), Catch::Contains("task.width"));
  CHECK_THROWS_WITH(task->parse_query("12345+1"), Catch::Contains("width"));
  CHECK_THROWS_WITH(task->parse_query("12-1"), Catch::Contains("query like"));
}

TEST_CASE("padded_arithmetic: reverse writes every number units first, aligned by significance",
          "[padded_arithmetic]") {
  auto task = make_task("{name: padded_arithmetic, width: 3, train_digits: 2, reverse: true}");
  auto [x, y] = labeled(*task, "12+39");
  CHECK(x == "2 1 <PAD> + 9 3 <PAD>");
  CHECK(y == "1 5 <PAD> <PAD>");
  std::tie(x, y) = labeled(*task, "999+5");  // operands of different lengths: units under units
  CHECK(x == "9 9 9 + 5 <PAD> <PAD>");
  CHECK(y == "4 0 0 1");
  auto mul = make_task(
      "{name: padded_arithmetic, operation: mul, width: 3, train_digits: 2, reverse: true}");
  CHECK(labeled(*mul, "535x257").second == "5 9 4 7 3 1");
  // Property: over random training and test examples, each reversed number read back units
  // first is the number the paper's encoding writes, token for token.
  auto plain = make_task("{name: padded_arithmetic, width: 6, train_digits: [1, 5]}");
  auto rev = make_task("{name: padded_arithmetic, width: 6, train_digits: [1, 5], reverse: true}");
  auto numbers = [](const lengen::Task& t, const lengen::Example& ex) {
    std::vector<std::string> out(1);
    for (int64_t i = 1; i + 1 < ex.length(); ++i) {
      const std::string tok = t.vocabulary().token(ex.tokens[i]);
      if (tok == "+" || tok == "=") {
        out.emplace_back();
      } else if (tok != "<PAD>") {
        out.back() += tok;
      }
    }
    return out;
  };
  lengen::Rng ra(11), rb(11);
  for (int i = 0; i < 300; ++i) {
    const auto a = plain->sample_train(ra);
    const auto b = rev->sample_train(rb);
    REQUIRE(a.length() == b.length());
    auto na = numbers(*plain, a), nb = numbers(*rev, b);
    REQUIRE(na.size() == 3);
    REQUIRE(nb.size() == 3);
    for (auto& n : nb)
      std::reverse(n.begin(), n.end());
    CHECK(na == nb);
    CHECK(lengen::decimal::add({na[0], na[1]}) == na[2]);
    CHECK(a.meta.at("length_gap") == b.meta.at("length_gap"));
  }
}
