// Addition task: the papers' worked examples, token for token and ID for ID.
#include "helpers.h"

using lengen::test::ids_string;
using lengen::test::make_task;

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
  SECTION("abacus indices: each digit's significance in its own number, other tokens 0") {
    auto task = make_task("{name: addition, pad_to: answer, position_ids: abacus}");
    auto ex = task->parse_query("57+48");
    CHECK(task->render(ex.tokens) == "$057+048=501$");
    CHECK(ids_string(ex) == "0 3 2 1 0 3 2 1 0 1 2 3 0");
    // Decoding computes the same IDs from the tokens so far (no answer leaks into them).
    const auto causal = task->causal_position_ids(ex.tokens, ex.prompt_length);
    CHECK(causal[0] == ex.position_ids[0]);
    auto unpadded =
        make_task("{name: addition, zero_pad: false, position_ids: abacus}")->parse_query("5+48");
    CHECK(ids_string(unpadded) == "0 1 0 2 1 0 1 2 0");
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
  CHECK_THROWS_WITH(task->sample_eval({{"digits", 0}}, rng),
                    Catch::Contains("digits must be >= 1"));
}

TEST_CASE("addition: the scratchpad format of Cho et al. 2025 (Fig. 4) with bi-level IDs",
          "[addition]") {
  auto task = make_task("{name: addition, operands: 3, pad_to: answer, scratchpad: true}");
  CHECK(task->position_levels() == 2);
  auto ex = task->parse_query("57+48+96");
  CHECK(task->render(ex.tokens) == "$057+048+096=000>750>501>102$");
  // tasks.md 1.3: level 1 couples significance, level 2 the number being added (BOS/EOS 0).
  CHECK(ids_string(ex, 0) == "0 4 3 2 1 4 3 2 1 4 3 2 1 2 3 4 1 2 3 4 1 2 3 4 1 2 3 4 0");
  CHECK(ids_string(ex, 1) == "0 1 1 1 1 2 2 2 2 3 3 3 1 1 1 1 2 2 2 2 3 3 3 3 4 4 4 4 0");
  // Loss on the whole scratchpad and EOS; the final answer is the last number.
  CHECK(ex.prompt_length == 13);
  CHECK(task->render({ex.tokens.begin() + ex.answer_begin, ex.tokens.end()}) == "102$");
  for (int64_t t = 0; t < ex.length(); ++t)
    CHECK(ex.loss_mask[t] == (t >= 13 ? 1 : 0));
  CHECK(task->max_response_length({ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length}) ==
        ex.length() - ex.prompt_length);
  // Decoding assigns the same IDs from the tokens alone.
  CHECK(task->causal_position_ids(ex.tokens, ex.prompt_length) == ex.position_ids);
  // A wrong scratchpad gets IDs from what was generated, not from the reference.
  auto wrong = ex.tokens;
  wrong[14] = task->vocabulary().id(">");
  auto ids = task->causal_position_ids(wrong, ex.prompt_length);
  CHECK(ids[0][14] == 1);
  CHECK(ids[1][14] == 2);
  CHECK(ids[0][15] == 2);  // first digit after the early '>'
}

TEST_CASE("addition: abacus indices are for the plain format", "[addition]") {
  CHECK_THROWS_WITH(
      make_task("{name: addition, scratchpad: true, pad_to: answer, position_ids: abacus}"),
      Catch::Contains("abacus indices are defined for the plain format"));
}

TEST_CASE("addition: scratchpad with sequential IDs, and the options it needs", "[addition]") {
  auto task =
      make_task("{name: addition, pad_to: answer, scratchpad: true, position_ids: sequential}");
  CHECK(task->position_levels() == 1);
  auto ex = task->parse_query("5+7");
  CHECK(task->render(ex.tokens) == "$05+07=00>50>21$");
  CHECK(ex.position_ids[0].back() == ex.length() - 1);
  CHECK_THROWS_WITH(make_task("{name: addition, scratchpad: true}"),
                    Catch::Contains("pad_to: answer"));
  // The plain task's vocabulary is unchanged (no '>'): its checkpoints stay loadable.
  CHECK(make_task("{name: addition}")->vocabulary().size() == 14);
  CHECK(task->vocabulary().size() == 15);
}

TEST_CASE("addition: the scratchpad's format ablations (Cho et al. 2025, Figures 6 and 14)",
          "[addition]") {
  auto check = [](const std::string& opts,
                  const std::string& text,
                  const std::string& ids1,
                  const std::string& ids2) {
    auto task = make_task("{name: addition, operands: 3, scratchpad: true, " + opts + "}");
    // Queries are read in the task's own direction: 57 + 48 + 96 in every case.
    auto ex = task->parse_query(opts.find("reverse_query") != std::string::npos ? "75+84+69"
                                                                                : "57+48+96");
    INFO(opts);
    CHECK(task->render(ex.tokens) == text);
    CHECK(ids_string(ex, 0) == ids1);  // significance: the same digit keeps its ID in every format
    CHECK(ids_string(ex, 1) == ids2);
    CHECK(task->causal_position_ids(ex.tokens, ex.prompt_length) == ex.position_ids);
    CHECK(task->render({ex.tokens.begin() + ex.answer_begin, ex.tokens.end()}) ==
          text.substr(text.rfind('>') + 1));
    CHECK(task->max_response_length({ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length}) >=
          ex.length() - ex.prompt_length);
  };
  // Reversed query, reversed output, padded.
  check("pad_to: answer, reverse_query: true",
        "$750+840+690=000>750>501>102$",
        "0 2 3 4 1 2 3 4 1 2 3 4 1 2 3 4 1 2 3 4 1 2 3 4 1 2 3 4 0",
        "0 1 1 1 1 2 2 2 2 3 3 3 1 1 1 1 2 2 2 2 3 3 3 3 4 4 4 4 0");
  // Plain query, plain output, padded: every partial sum most significant digit first.
  check("pad_to: answer, reverse_output: false",
        "$057+048+096=000>057>105>201$",
        "0 4 3 2 1 4 3 2 1 4 3 2 1 4 3 2 1 4 3 2 1 4 3 2 1 4 3 2 0",
        "0 1 1 1 1 2 2 2 2 3 3 3 1 1 1 1 2 2 2 2 3 3 3 3 4 4 4 4 0");
  // No padding (Figure 6): every number its own length, b_0 = 0; IDs still count significance.
  check("zero_pad: false",
        "$57+48+96=0>75>501>102$",
        "0 3 2 1 3 2 1 3 2 1 2 1 2 3 1 2 3 4 1 2 3 4 0",
        "0 1 1 1 2 2 2 3 3 1 1 2 2 2 3 3 3 3 4 4 4 4 0");
  check("zero_pad: false, reverse_query: true",
        "$75+84+69=0>75>501>102$",
        "0 2 3 1 2 3 1 2 3 1 2 1 2 3 1 2 3 4 1 2 3 4 0",
        "0 1 1 1 2 2 2 3 3 1 1 2 2 2 3 3 3 3 4 4 4 4 0");
  // Plain, unpadded partial sums would need their lengths for IDs: refused unless sequential.
  CHECK_THROWS_WITH(
      make_task("{name: addition, scratchpad: true, zero_pad: false, reverse_output: false}"),
      Catch::Contains("leak"));
  auto seq = make_task(
      "{name: addition, scratchpad: true, zero_pad: false, reverse_output: false, "
      "position_ids: sequential}");
  CHECK(seq->render(seq->parse_query("57+48").tokens) == "$57+48=0>57>105$");
}

TEST_CASE("addition: S_A(n, m) training and the T_A (digits x operands) grid", "[addition]") {
  auto task = make_task(
      "{name: addition, pad_to: answer, scratchpad: true, train_digits: [1, 5], "
      "train_operands: [2, 5], mixed_lengths: true, eval_digits: [1, 30], "
      "eval_operands: [2, 30]}");
  auto axes = task->grid_axes();
  REQUIRE(axes.size() == 2);
  CHECK(axes[1].name == "operands");
  CHECK(axes[1].lo == 2);
  CHECK(axes[1].hi == 30);
  CHECK(axes[1].train_hi == 5);
  lengen::Rng rng(3);
  std::set<int64_t> counts;
  int same = 0, differ = 0;
  for (int i = 0; i < 400; ++i) {
    auto ex = task->sample_train(rng);
    counts.insert(ex.meta.at("operands"));
    CHECK(task->causal_position_ids(ex.tokens, ex.prompt_length) == ex.position_ids);
    // Operand lengths from the query: digits before the padding... compare the unpadded sizes.
    std::string q = task->render({ex.tokens.begin() + 1, ex.tokens.begin() + ex.prompt_length - 1});
    std::set<size_t> lens;
    size_t start = 0;
    while (true) {
      size_t plus = q.find('+', start);
      std::string part =
          q.substr(start, plus == std::string::npos ? std::string::npos : plus - start);
      size_t nz = part.find_first_not_of('0');
      lens.insert(nz == std::string::npos ? 1 : part.size() - nz);
      if (plus == std::string::npos)
        break;
      start = plus + 1;
    }
    (lens.size() == 1 ? same : differ) += 1;
  }
  CHECK(counts == std::set<int64_t>{2, 3, 4, 5});
  CHECK(same > 100);    // half the samples share one length (plus chance agreements)
  CHECK(differ > 100);  // the other half draw lengths independently
  // A T_A cell: exactly m operands of exactly n digits.
  auto ex = task->sample_eval({{"digits", 30}, {"operands", 30}}, rng);
  CHECK(ex.meta.at("operands") == 30);
  CHECK(ex.meta.at("digits") == 30);
  CHECK(task->causal_position_ids(ex.tokens, ex.prompt_length) == ex.position_ids);
  // 30 numbers of 30 digits: the answer has 32 digits; 31 partial sums of 32 digits, 30 '>'.
  CHECK(ex.length() - ex.prompt_length == 31 * 32 + 30 + 1);
  CHECK(*std::max_element(ex.position_ids[0].begin(), ex.position_ids[0].end()) == 33);
  CHECK(*std::max_element(ex.position_ids[1].begin(), ex.position_ids[1].end()) == 31);
}

TEST_CASE("addition: index hints mark significance, never the answer", "[addition][hints]") {
  auto task = make_task("{name: addition, position_ids: sequential, index_hints: 10}");
  // Hint o + k - 1 before each digit of significance k; a query without hints gets o = 0.
  auto ex = task->parse_query("57+48");
  CHECK(task->render(ex.tokens) == "$b5a7+b4a8=a5b0c1$");
  const std::vector<int64_t> prompt(ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length);
  CHECK(task->max_response_length(prompt) == 7);
  // Hints given in a query are read back; inconsistent or unknown ones are refused.
  CHECK(task->render(task->parse_query("d5c7+d4c8=").tokens) == "$d5c7+d4c8=c5d0e1$");
  CHECK_THROWS_WITH(task->parse_query("d5c7+c4d8"), Catch::Contains("consistently"));
  CHECK_THROWS_WITH(task->parse_query("z5a7+b4a8"),
                    Catch::Contains("'z'") && Catch::Contains("10 index hints"));
  // Past 26 hints the tokens are A..Z, then <52>, ...
  auto wide = make_task("{name: addition, position_ids: sequential, index_hints: 60}");
  CHECK(wide->render(wide->parse_query("<53>1<52>2+<53>3<52>4").tokens) ==
        "$<53>1<52>2+<53>3<52>4=<52>6<53>4<54>0$");

  // Training samples: every digit after its hint; the response's hints follow from the
  // prompt's alone (o = the smallest hint there), so they carry nothing of the answer.
  auto train = make_task(
      "{name: addition, position_ids: sequential, index_hints: 12, train_digits: [1, 8]}");
  const auto& v = train->vocabulary();
  const int64_t h0 = v.id("a");
  lengen::Rng rng(3);
  std::set<int64_t> offsets;
  for (int i = 0; i < 300; ++i) {
    const auto s = train->sample_train(rng);
    const std::vector<int64_t> p(s.tokens.begin(), s.tokens.begin() + s.prompt_length);
    const auto r = s.response();
    int64_t o = 12;
    for (int64_t t : p) {
      if (t >= h0)
        o = std::min(o, t - h0);
    }
    REQUIRE(r.size() % 2 == 1);
    for (size_t k = 0; k + 1 < r.size(); k += 2) {
      CHECK(r[k] == h0 + o + static_cast<int64_t>(k / 2));  // significance k/2 + 1, LSD first
      CHECK(r[k + 1] < h0);                                 // a digit
    }
    CHECK(o + static_cast<int64_t>(r.size() / 2) <= 12);
    CHECK(train->max_response_length(p) == static_cast<int64_t>(r.size()));
    CHECK(train->causal_position_ids(s.tokens, s.prompt_length) == s.position_ids);
    // The same prompt, read back from its text, gives the same response (hints and digits).
    CHECK(train->parse_query(train->render({p.begin() + 1, p.end()})).tokens == s.tokens);
    offsets.insert(o);
  }
  CHECK(offsets.count(0) == 1);
  CHECK(offsets.size() >= 8);
  // Evaluation: an 11-digit sum of 12 digits fills the 12 hints (o = 0); 12 digits do not fit.
  CHECK(train->sample_eval({{"digits", 11}}, rng).tokens[1] == v.id("k"));
  CHECK_THROWS_WITH(train->sample_eval({{"digits", 12}}, rng), Catch::Contains("index_hints 12"));
  CHECK_THROWS_WITH(make_task("{name: addition, index_hints: 10}"), Catch::Contains("index_hints"));
}
