// The evaluation breakdown (eval.breakdown: accuracy by example feature, number and positions
// of wrong tokens) on hand-made responses; string-list options; Jelassi et al.'s priming
// mixture proportions.
#include "helpers.h"

#include "lengen/eval/evaluator.h"
#include "lengen/train/data.h"

#include <set>

using namespace lengen;

TEST_CASE("breakdown: accuracy by feature and wrong-token positions on hand-made responses",
          "[eval][breakdown]") {
  CellAnalysis a;
  const std::vector<std::string> f{"carries"};
  const std::vector<int64_t> ref{1, 2, 3, 4};
  a.add({{"carries", 0}}, f, true, ref, {1, 2, 3, 4});
  a.add({{"carries", 2}}, f, false, ref, {1, 9, 3, 4});  // one wrong, at 1
  a.add({{"carries", 2}}, f, false, ref, {9, 2, 9, 4});  // two wrong, at 0 and 2
  a.add({{"carries", 3}}, f, false, ref, {1, 2, 3});     // one missing token, at 3
  a.add({{"carries", 3}}, f, true, ref, {1, 2, 3, 4});
  CHECK(a.by_feature.at("carries").at(0) == std::make_pair<int64_t, int64_t>(1, 1));
  CHECK(a.by_feature.at("carries").at(2) == std::make_pair<int64_t, int64_t>(2, 0));
  CHECK(a.by_feature.at("carries").at(3) == std::make_pair<int64_t, int64_t>(2, 1));
  CHECK(a.wrong_tokens == std::map<int64_t, int64_t>{{1, 2}, {2, 1}});
  CHECK(a.single_error_position == std::map<int64_t, int64_t>{{1, 1}, {3, 1}});
  CHECK(a.error_positions == std::map<int64_t, int64_t>{{0, 1}, {1, 1}, {2, 1}, {3, 1}});
  CHECK_THROWS_WITH(a.add({{"digits", 3}}, f, true, ref, ref), Catch::Contains("carries"));
}

TEST_CASE("breakdown: eval.breakdown is a list of strings; a scalar is a one-element list",
          "[eval][breakdown]") {
  auto axes = std::vector<GridAxis>{{"digits", "", 1, 4, 1, 2}};
  auto load = [&](const std::string& yaml) {
    return EvalConfig::from_config(load_config_string(yaml, "<t>"), axes);
  };
  CHECK(load("{}").breakdown.empty());
  CHECK(load("{breakdown: [carries, carry_chain]}").breakdown ==
        std::vector<std::string>{"carries", "carry_chain"});
  CHECK(load("{breakdown: carries}").breakdown == std::vector<std::string>{"carries"});
  CHECK_THROWS_WITH(load("{breakdown: {a: 1}}"), Catch::Contains("list of strings"));
  // Written back for the run's resolved config.
  CHECK(load("{breakdown: [carries]}").to_yaml()["breakdown"][0].as<std::string>() == "carries");
}

TEST_CASE("priming: eps of the examples are the fixed primers, the rest standard",
          "[data][priming]") {
  auto standard =
      test::make_task("{name: padded_arithmetic, operation: mul, width: 12, train_set_size: 99}");
  auto primers = test::make_task(
      "{name: padded_arithmetic, operation: mul, width: 12, train_digits: 12, train_set_size: 0}");
  TrainingData data({{"standard", standard, 0.95, 0}, {"primers", primers, 0.05, 10}}, 3);
  std::set<std::vector<int64_t>> primer_seen, first_operands;
  int64_t n_primers = 0, total = 0;
  for (int64_t step = 0; step < 200; ++step) {
    std::vector<int> source;
    auto batch = data.batch(step, 100, &source);
    for (size_t i = 0; i < batch.size(); ++i) {
      ++total;
      const auto& ex = batch[i];
      if (source[i] == 1) {
        ++n_primers;
        primer_seen.insert(ex.tokens);
        CHECK(ex.tokens[6] != primers->vocabulary().id("<PAD>"));   // below 10^12, not 10^5
        CHECK(ex.tokens[17] == primers->vocabulary().id("<PAD>"));  // the second below 10^3
      } else {
        first_operands.emplace(ex.tokens.begin() + 1, ex.tokens.begin() + 13);
        CHECK(ex.tokens[6] == standard->vocabulary().id("<PAD>"));  // below 10^5
      }
    }
  }
  const double eps = static_cast<double>(n_primers) / static_cast<double>(total);
  CHECK(eps > 0.045);  // 1000 expected of 20000; sd about 31
  CHECK(eps < 0.055);
  CHECK(primer_seen.size() == 10);  // the fixed primers, both operands fixed
  CHECK(first_operands.size() == 99);
}

// The other reading of the paper's primers (section 2.2: "the second operands are generated
// online" in all training procedures): the primers' source keeps N_train = 10 fixed first
// operands of exactly 12 digits and draws each second operand fresh, as the standard source does.
TEST_CASE("priming: online primers keep their first operands fixed and draw the second fresh",
          "[data][priming]") {
  auto standard =
      test::make_task("{name: padded_arithmetic, operation: mul, width: 12, train_set_size: 99}");
  auto primers = test::make_task(
      "{name: padded_arithmetic, operation: mul, width: 12, train_digits: 12, train_set_size: 10, "
      "exact_digits: true}");
  TrainingData data({{"standard", standard, 0.95, 0}, {"primers", primers, 0.05, 0}}, 3);
  const auto& vocab = primers->vocabulary();
  std::set<std::vector<int64_t>> primer_firsts, primer_examples;
  int64_t n_primers = 0;
  for (int64_t step = 0; step < 200; ++step) {
    std::vector<int> source;
    auto batch = data.batch(step, 100, &source);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (source[i] != 1)
        continue;
      const auto& t = batch[i].tokens;
      ++n_primers;
      primer_firsts.emplace(t.begin() + 1, t.begin() + 13);
      primer_examples.insert(t);
      CHECK(t[1] != vocab.id("0"));       // exactly 12 digits: no leading zero,
      CHECK(t[12] != vocab.id("<PAD>"));  // and no padding inside the first operand
      CHECK(t[16] != vocab.id("<PAD>"));  // the second has exactly 3 digits (exact_digits)
      CHECK(t[17] == vocab.id("<PAD>"));
    }
  }
  CHECK(n_primers > 850);  // 1000 expected of 20000
  CHECK(primer_firsts.size() == 10);
  // 10 first operands x 900 second ones: about 955 distinct pairs in 1000 draws; fixed
  // primers would give 10.
  CHECK(primer_examples.size() > 800);
}
