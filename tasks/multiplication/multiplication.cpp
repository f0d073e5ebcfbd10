// N x M integer multiplication (Cho et al. 2025, arXiv:2410.15787, section 5), with or without
// the two-stage scratchpad. A has M digits, B has N digits; the query `A*B=` is not padded.
// With scratchpad: stage 1 writes A * (k-th least significant digit of B) for k = 1..N, each
// zero-padded to M+1 digits and reversed, joined by `+`; a second `=` (predicted); stage 2
// writes the cumulative shifted sums c_k = sum_{t<=k} A * B_t * 10^(t-1), each padded to M+N
// digits and reversed, joined by `>`; the last is the answer:
//   37*925=581+470+333=58100>52900>52243
// Tri-level coupled IDs (tasks.md 1.6): level 1 couples A's digits with the digits of every
// stage-1 number, level 2 names B's digit / the number (k-1), level 3 the significance in stage
// 2; zeros elsewhere. Without scratchpad: the product, zero-padded to M+N digits and reversed,
// with single-level coupling of A, B and the answer by significance (`*` and `=` get s):
//   37*925=52243 with IDs 3 2 1 4 3 2 1 2 3 4 5 6 (EOS 0).
#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/task/decimal.h"
#include "lengen/task/task.h"

#include <algorithm>

namespace {

using lengen::Example;
using lengen::OptionSpec;
using lengen::PositionIds;
using lengen::decimal::pad_left;
using lengen::decimal::random_number;
using lengen::decimal::strip_zeros;

const auto& multiply_decimal = lengen::decimal::multiply;

std::string reversed(std::string x) {
  std::reverse(x.begin(), x.end());
  return x;
}

class Multiplication final : public lengen::Task {
 public:
  static lengen::ComponentSpec spec() {
    return {"task",
            "multiplication",
            "N x M multiplication `A*B=P` (reversed, zero-padded product) or with the two-stage "
            "scratchpad and tri-level coupled IDs",
            {OptionSpec::boolean("scratchpad",
                                 "write A times each digit of B, `=`, then the "
                                 "cumulative shifted sums (tri-level coupled IDs)")
                 .with_default(false),
             OptionSpec::string("position_ids",
                                "coupled: by significance (three levels with the "
                                "scratchpad); sequential: 0, 1, 2, ...")
                 .with_default("coupled")
                 .one_of({"coupled", "sequential"}),
             OptionSpec::int_list("train_a_digits", "[lo, hi]: lengths of A in training (S_M)")
                 .with_default(std::vector<int64_t>{1, 10})
                 .at_least(1),
             OptionSpec::int_list("train_b_digits", "[lo, hi]: lengths of B in training (S_M)")
                 .with_default(std::vector<int64_t>{1, 10})
                 .at_least(1),
             OptionSpec::int_list("eval_a_digits", "[lo, hi]: default range of the 'a_digits' axis")
                 .with_default(std::vector<int64_t>{1, 30})
                 .at_least(1),
             OptionSpec::int_list("eval_b_digits", "[lo, hi]: default range of the 'b_digits' axis")
                 .with_default(std::vector<int64_t>{1, 30})
                 .at_least(1),
             OptionSpec::boolean("zero_pad", "pad the product to M+N digits (no scratchpad)")
                 .with_default(true),
             OptionSpec::boolean("reverse_output",
                                 "write the product least significant digit first "
                                 "(no scratchpad)")
                 .with_default(true)}};
  }

  Multiplication(const lengen::Options& o, const lengen::TaskContext&)
      : scratchpad_(o.get_bool("scratchpad")),
        coupled_(o.get_string("position_ids") == "coupled"),
        zero_pad_(o.get_bool("zero_pad")),
        reverse_(o.get_bool("reverse_output")),
        train_a_(o.get_int_range("train_a_digits")),
        train_b_(o.get_int_range("train_b_digits")),
        eval_a_(o.get_int_range("eval_a_digits")),
        eval_b_(o.get_int_range("eval_b_digits")),
        vocab_({"<pad>", "$", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "*", "+", ">", "="},
               "<pad>",
               "$",
               "$") {
    if (scratchpad_ && (!zero_pad_ || !reverse_)) {
      o.fail(zero_pad_ ? "reverse_output" : "zero_pad",
             "the scratchpad writes every number zero-padded and least significant digit first: "
             "set zero_pad: true and reverse_output: true");
    }
    if (coupled_ && !reverse_ && !zero_pad_) {
      o.fail("reverse_output",
             "coupled IDs of an unpadded, most-significant-first product depend on its length, "
             "which decoding cannot know (it would leak the answer); set reverse_output: true, "
             "zero_pad: true or position_ids: sequential");
    }
    times_ = vocab_.id("*");
    plus_ = vocab_.id("+");
    arrow_ = vocab_.id(">");
    eq_ = vocab_.id("=");
  }

  const lengen::Vocabulary& vocabulary() const override { return vocab_; }

  int64_t position_levels() const override { return scratchpad_ && coupled_ ? 3 : 1; }

  Example sample_train(lengen::Rng& rng) const override {
    std::string a = random_number(rng.uniform_int(train_a_.first, train_a_.second), rng);
    std::string b = random_number(rng.uniform_int(train_b_.first, train_b_.second), rng);
    return make_example(a, b);
  }

  std::vector<lengen::GridAxis> grid_axes() const override {
    return {{"a_digits",
             "length of the first operand A",
             eval_a_.first,
             eval_a_.second,
             train_a_.first,
             train_a_.second},
            {"b_digits",
             "length of the second operand B",
             eval_b_.first,
             eval_b_.second,
             train_b_.first,
             train_b_.second}};
  }

  Example sample_eval(const lengen::GridCell& cell, lengen::Rng& rng) const override {
    auto a = cell.find("a_digits");
    auto b = cell.find("b_digits");
    LENGEN_CHECK(a != cell.end() && b != cell.end(),
                 "multiplication: grid cell needs 'a_digits' and 'b_digits'");
    LENGEN_CHECK(a->second >= 1 && b->second >= 1,
                 "multiplication: a_digits and b_digits must be >= 1, got {} and {}",
                 a->second,
                 b->second);
    std::string x = random_number(a->second, rng);
    return make_example(x, random_number(b->second, rng));
  }

  Example parse_query(const std::string& text) const override {
    std::string q;
    for (char c : text) {
      if (c != ' ')
        q += c == 'x' ? '*' : c;
    }
    if (!q.empty() && q.back() == '=')
      q.pop_back();
    const size_t star = q.find('*');
    auto valid = [](const std::string& x) {
      return !x.empty() && x.find_first_not_of("0123456789") == std::string::npos;
    };
    if (star == std::string::npos || !valid(q.substr(0, star)) || !valid(q.substr(star + 1))) {
      throw lengen::Error(
          fmt::format("multiplication: '{}' is not a query like 37*925 (two decimal "
                      "numbers separated by '*')",
                      text));
    }
    return make_example(strip_zeros(q.substr(0, star)), strip_zeros(q.substr(star + 1)));
  }

  PositionIds causal_position_ids(const std::vector<int64_t>& tokens,
                                  int64_t prompt_length) const override {
    const int64_t T = static_cast<int64_t>(tokens.size());
    PositionIds ids(static_cast<size_t>(position_levels()),
                    std::vector<int64_t>(static_cast<size_t>(T), 0));
    if (!coupled_) {
      for (int64_t t = 0; t < T; ++t)
        ids[0][t] = t;
      return ids;
    }
    const int64_t s = 1, qlen = std::min(prompt_length, T);
    // The query: A's and B's digits by significance (level 1 or 2), from the runs' lengths.
    int64_t M = 0, N = 0;
    bool in_b = false;
    for (int64_t t = 1; t < qlen; ++t) {
      if (is_digit(tokens[t])) {
        (in_b ? N : M) += 1;
      } else if (tokens[t] == times_) {
        in_b = true;
      }
    }
    int64_t seen = 0;
    for (int64_t t = 1; t < qlen; ++t) {
      if (is_digit(tokens[t])) {
        ++seen;
        const int64_t k = seen <= M ? M - seen + 1 : M + N - seen + 1;  // significance, 1 = least
        if (!scratchpad_) {
          ids[0][t] = s + k;
        } else if (seen <= M) {
          ids[0][t] = s + k;
        } else {
          ids[1][t] = s + k - 1;
        }
      } else if (tokens[t] == eq_) {
        ids[0][t] = s;
        if (scratchpad_) {
          ids[1][t] = s;
          ids[2][t] = s;
        }
      } else if (tokens[t] == times_ && !scratchpad_) {
        ids[0][t] = s;
      }
    }
    if (!scratchpad_) {
      int64_t k = 0;
      for (int64_t t = prompt_length; t < T; ++t) {
        if (is_digit(tokens[t])) {
          ++k;
          ids[0][t] = reverse_ ? s + k : std::max<int64_t>(0, s + M + N - k + 1);
        }
      }
      return ids;
    }
    // The scratchpad: stage 1 until the second `=`; group k and digit j count separators and
    // digits generated so far.
    int stage = 1;
    int64_t k = 1, j = 0;
    for (int64_t t = prompt_length; t < T; ++t) {
      const int64_t tok = tokens[t];
      if (is_digit(tok)) {
        ++j;
        if (stage == 1) {
          ids[0][t] = s + j;
          ids[1][t] = s + k - 1;
          ids[2][t] = s + k - 1 + j;
        } else {
          ids[1][t] = s + k - 1;
          ids[2][t] = s + j;
        }
      } else if (stage == 1 && tok == plus_) {
        ++k;
        j = 0;
        ids[0][t] = s;
        ids[1][t] = s + k - 1;
        ids[2][t] = s + k - 1;
      } else if (stage == 1 && tok == eq_) {
        stage = 2;
        k = 1;
        j = 0;
        ids[1][t] = s;
        ids[2][t] = s;
      } else if (stage == 2 && tok == arrow_) {
        ++k;
        j = 0;
        ids[1][t] = s + k - 1;
        ids[2][t] = s;
      }  // EOS or a token out of place: 0 at every level
    }
    return ids;
  }

  int64_t max_response_length(const std::vector<int64_t>& prompt) const override {
    int64_t M = 0, N = 0;
    bool in_b = false;
    for (int64_t t : prompt) {
      if (is_digit(t))
        (in_b ? N : M) += 1;
      in_b = in_b || t == times_;
    }
    if (!scratchpad_)
      return M + N + 1;
    return N * (M + 1) + (N - 1) + 1 + N * (M + N) + (N - 1) + 1;
  }

 private:
  bool is_digit(int64_t tok) const { return tok >= 2 && tok <= 11; }  // ids of "0".."9"

  int64_t digit_id(char c) const { return 2 + (c - '0'); }

  // The "template" form of the IDs; the causal form above must agree on correct responses
  // (the contract tests check it).
  Example make_example(const std::string& a, const std::string& b) const {
    const int64_t M = static_cast<int64_t>(a.size()), N = static_cast<int64_t>(b.size());
    const int64_t L = scratchpad_ && coupled_ ? 3 : 1;
    Example ex;
    ex.position_ids.assign(static_cast<size_t>(L), {});
    const int64_t s = 1;
    const bool tri = L == 3;
    ex.push(vocab_.bos(), {0, 0, 0}, false);
    for (int64_t i = 0; i < M; ++i)
      ex.push(digit_id(a[i]), {s + M - i, 0, 0}, false);
    ex.push(times_, {tri ? 0 : s, 0, 0}, false);
    for (int64_t i = 0; i < N; ++i) {
      ex.push(digit_id(b[i]), {tri ? 0 : s + N - i, tri ? s + N - i - 1 : 0, 0}, false);
    }
    ex.push(eq_, {s, s, s}, false);
    ex.prompt_length = ex.length();
    const std::string product = multiply_decimal(a, b);
    if (!scratchpad_) {
      std::string p = zero_pad_ ? pad_left(product, static_cast<size_t>(M + N)) : product;
      ex.answer_begin = ex.length();
      for (size_t w = 0; w < p.size(); ++w) {
        const size_t pos =
            reverse_ ? p.size() - 1 - w : w;  // index into p of the w-th written digit
        ex.push(digit_id(p[pos]), {s + static_cast<int64_t>(p.size() - pos), 0, 0}, true);
      }
    } else {
      // Stage 1: A * B_k, padded to M+1, reversed.
      for (int64_t k = 1; k <= N; ++k) {
        if (k > 1)
          ex.push(plus_, {s, s + k - 1, s + k - 1}, true);
        const std::string bk(1, b[static_cast<size_t>(N - k)]);
        const std::string x =
            reversed(pad_left(multiply_decimal(a, bk), static_cast<size_t>(M + 1)));
        for (int64_t j = 1; j <= M + 1; ++j)
          ex.push(digit_id(x[j - 1]), {s + j, s + k - 1, s + k - 1 + j}, true);
      }
      // Stage 2: c_k = A * (the k least significant digits of B), padded to M+N, reversed.
      ex.push(eq_, {0, s, s}, true);
      for (int64_t k = 1; k <= N; ++k) {
        if (k > 1)
          ex.push(arrow_, {0, s + k - 1, s}, true);
        if (k == N)
          ex.answer_begin = ex.length();
        const std::string low = strip_zeros(b.substr(static_cast<size_t>(N - k)));
        const std::string c =
            reversed(pad_left(multiply_decimal(a, low), static_cast<size_t>(M + N)));
        for (int64_t j = 1; j <= M + N; ++j)
          ex.push(digit_id(c[j - 1]), {0, s + k - 1, s + j}, true);
      }
    }
    ex.push(vocab_.eos(), {0, 0, 0}, true);
    if (!coupled_) {
      for (int64_t t = 0; t < ex.length(); ++t)
        ex.position_ids[0][t] = t;
    }
    ex.meta["a_digits"] = M;
    ex.meta["b_digits"] = N;
    return ex;
  }

  bool scratchpad_, coupled_, zero_pad_, reverse_;
  std::pair<int64_t, int64_t> train_a_, train_b_, eval_a_, eval_b_;
  lengen::Vocabulary vocab_;
  int64_t times_ = 0, plus_ = 0, arrow_ = 0, eq_ = 0;
};

void register_multiplication(lengen::Registrar& r) {
  r.add_task<Multiplication>();
}

}  // namespace

LENGEN_PLUGIN("multiplication", "0.1.0", register_multiplication)
