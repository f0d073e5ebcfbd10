// Multi-operand addition (Cho et al. 2024, arXiv:2405.20671 for 2 operands; Cho et al. 2025,
// arXiv:2410.15787, sections 4.1-4.3 for many operands), with or without the cumulative-sum
// scratchpad.
// Without scratchpad: `$ a_1 + ... + a_m = s $` ($ is both BOS and EOS), single-level coupled
// IDs (start s = 1 at test time): the k-th least significant digit of every number has ID s+k,
// `+` and `=` have s, BOS/EOS 0. Example (pad_to: answer): `057+048=501` -> 43214321234.
// With scratchpad: `$ a_1 + ... + a_m = b_0 > b_1 > ... > b_m $`, b_i = a_1 + ... + a_i
// (b_0 = 0), every number padded to the answer's maximal length and every b_i reversed; bi-level
// IDs: level 1 as above, level 2 the number's group (a_i: i-1, its `+` too; `=` and b_0: 0;
// `>` and b_i: i), plus s. Example: `057+048+096=000>750>501>102`.
// position_ids: abacus is the same layout with s = 0: digits carry their significance within
// their own number (1 = least significant), every other token 0 (McLeish et al. 2024).
// Causal IDs count digits since the last separator (and `>` so far), so decoding never sees the
// reference.
// index_hints: N (Zhou et al. 2024, after Zhou et al. 2023): a hint token before every digit of
// every operand and of the answer, the same hint for the same significance: hint o + k - 1 for
// significance k (1 = least), o drawn per example so that every hint is trained. Hints are
// tokens a..z, A..Z, then <52>, <53>, ...: `57+48` with o = 0 is `b5a7+b4a8=a5b0c1`.
#include "format.h"
#include "schema.h"

#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/task/decimal.h"
#include "lengen/task/task.h"

#include <algorithm>
#include <cctype>

namespace {

using lengen::Example;
using lengen::OptionSpec;
using lengen::PositionIds;
using lengen::decimal::pad_left;
using lengen::decimal::random_number;
using lengen::decimal::strip_zeros;
using lengen::tasks::addition::hint_offset;
using lengen::tasks::addition::hint_text;
using lengen::tasks::addition::max_sum_length;
using lengen::tasks::addition::strip_spaces;
using lengen::tasks::addition::vocabulary_tokens;

const auto& add_decimal = lengen::decimal::add;

class Addition final : public lengen::Task {
 public:
  static lengen::ComponentSpec spec() { return lengen::tasks::addition_schema(); }

  Addition(const lengen::Options& o, const lengen::TaskContext&)
      : operands_(o.get_int("operands")),
        same_length_(o.get_bool("same_length")),
        zero_pad_(o.get_bool("zero_pad")),
        pad_to_answer_(o.get_string("pad_to") == "answer"),
        reverse_(o.get_bool("reverse_output")),
        reverse_query_(o.get_bool("reverse_query")),
        coupled_(o.get_string("position_ids") != "sequential"),
        mixed_lengths_(o.get_bool("mixed_lengths")),
        scratchpad_(o.get_bool("scratchpad")),
        start_(o.get_string("position_ids") == "abacus" ? 0 : 1),
        hints_(o.get_int("index_hints")),
        vocab_(vocabulary_tokens(o.get_bool("scratchpad"), o.get_int("index_hints")),
               "<pad>",
               "$",
               "$") {
    train_ = o.get_int_range("train_digits");
    eval_ = o.get_int_range("eval_digits");
    train_ops_ = o.given("train_operands") ? o.get_int_range("train_operands")
                                           : std::pair<int64_t, int64_t>{operands_, operands_};
    eval_ops_ = o.given("eval_operands") ? o.get_int_range("eval_operands")
                                         : std::pair<int64_t, int64_t>{operands_, operands_};
    if (scratchpad_ && zero_pad_ && !pad_to_answer_) {
      o.fail("pad_to",
             "the padded scratchpad pads every number to the answer's maximal length: "
             "set pad_to: answer (or zero_pad: false)");
    }
    if (scratchpad_ && start_ == 0) {
      o.fail("position_ids",
             "abacus indices are defined for the plain format; the scratchpad's "
             "bi-level IDs are position_ids: coupled");
    }
    if (coupled_ && !reverse_ && !zero_pad_) {
      o.fail("reverse_output",
             "coupled IDs of an unpadded, most-significant-first answer depend on the answer's "
             "length, which decoding cannot know (it would leak the answer); set "
             "reverse_output: true, zero_pad: true or position_ids: sequential");
    }
    if (hints_ > 0 && (coupled_ || scratchpad_)) {
      o.fail("index_hints",
             "index hints mark each digit's significance with a token, for the plain format "
             "with position_ids: sequential (and NoPE, FIRE, RoPE, randomized positions...)");
    }
    plus_ = vocab_.id("+");
    hint0_ = hints_ > 0 ? vocab_.id(hint_text(0)) : -1;
    eq_ = vocab_.id("=");
    arrow_ = scratchpad_ ? vocab_.id(">") : -1;
  }

  const lengen::Vocabulary& vocabulary() const override { return vocab_; }

  int64_t position_levels() const override { return scratchpad_ && coupled_ ? 2 : 1; }

  Example sample_train(lengen::Rng& rng) const override {
    std::vector<std::string> ops;
    const int64_t m = rng.uniform_int(train_ops_.first, train_ops_.second);
    const int64_t shared = rng.uniform_int(train_.first, train_.second);
    const bool same = mixed_lengths_ ? rng.uniform_int(0, 1) == 1 : same_length_;
    for (int64_t i = 0; i < m; ++i) {
      ops.push_back(
          random_number(same ? shared : rng.uniform_int(train_.first, train_.second), rng));
    }
    return make_example(ops, hint_offset(hints_, ops, rng));
  }

  std::vector<lengen::GridAxis> grid_axes() const override {
    std::vector<lengen::GridAxis> axes{{"digits",
                                        "length of every operand",
                                        eval_.first,
                                        eval_.second,
                                        train_.first,
                                        train_.second}};
    if (eval_ops_.first < eval_ops_.second) {
      axes.push_back({"operands",
                      "number of operands",
                      eval_ops_.first,
                      eval_ops_.second,
                      train_ops_.first,
                      train_ops_.second});
    }
    return axes;
  }

  Example sample_eval(const lengen::GridCell& cell, lengen::Rng& rng) const override {
    auto it = cell.find("digits");
    LENGEN_CHECK(it != cell.end(), "addition: grid cell has no 'digits'");
    LENGEN_CHECK(it->second >= 1, "addition: digits must be >= 1, got {}", it->second);
    auto mt = cell.find("operands");
    const int64_t m = mt == cell.end() ? eval_ops_.first : mt->second;
    LENGEN_CHECK(m >= 2, "addition: operands must be >= 2, got {}", m);
    std::vector<std::string> ops;
    for (int64_t i = 0; i < m; ++i) {
      ops.push_back(random_number(it->second, rng));
    }
    return make_example(ops, hint_offset(hints_, ops, rng));
  }

  Example parse_query(const std::string& text) const override {
    std::string q;
    int64_t offset = -1;  // the smallest hint given: the one of significance 1
    for (size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (c == ' ')
        continue;
      if (hints_ > 0 && (std::isalpha(static_cast<unsigned char>(c)) || c == '<')) {
        const size_t close = text.find('>', i);
        const size_t len =
            c != '<' ? 1 : (close == std::string::npos ? text.size() - i : close - i + 1);
        const std::string tok = text.substr(i, len);
        i += len - 1;
        const int64_t h = vocab_.contains(tok) ? vocab_.id(tok) - hint0_ : -1;
        if (h < 0 || h >= hints_) {
          throw lengen::Error(fmt::format(
              "addition: '{}' in '{}' is not one of the {} index hints", tok, text, hints_));
        }
        offset = offset < 0 ? h : std::min(offset, h);
        continue;
      }
      q += c;
    }
    if (!q.empty() && q.back() == '=') {
      q.pop_back();
    }
    std::vector<std::string> ops;
    size_t start = 0;
    while (true) {
      size_t plus = q.find('+', start);
      std::string part =
          q.substr(start, plus == std::string::npos ? std::string::npos : plus - start);
      if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos) {
        throw lengen::Error(
            fmt::format("addition: '{}' is not a query like 57+48 (operands are "
                        "decimal digits separated by '+')",
                        text));
      }
      if (reverse_query_) {
        std::reverse(part.begin(), part.end());  // written least significant digit first
      }
      ops.push_back(strip_zeros(part));
      if (plus == std::string::npos) {
        break;
      }
      start = plus + 1;
    }
    const int64_t m = static_cast<int64_t>(ops.size());
    const int64_t lo = std::min(train_ops_.first, eval_ops_.first);
    const int64_t hi = std::max(train_ops_.second, eval_ops_.second);
    LENGEN_CHECK(lo == hi ? m == lo : m >= 2,
                 "addition: '{}' has {} operands but the task is configured for {}",
                 text,
                 m,
                 lo == hi ? std::to_string(lo) : "at least 2");
    Example ex = make_example(ops, std::max<int64_t>(offset, 0));
    std::string given = strip_spaces(text);
    if (!given.empty() && given.back() != '=')
      given += '=';
    if (offset >= 0 &&
        render({ex.tokens.begin() + 1, ex.tokens.begin() + ex.prompt_length}) != given) {
      throw lengen::Error(
          fmt::format("addition: the index hints of '{}' do not mark significance consistently "
                      "(expected '{}')",
                      text,
                      render({ex.tokens.begin() + 1, ex.tokens.begin() + ex.prompt_length})));
    }
    return ex;
  }

  PositionIds causal_position_ids(const std::vector<int64_t>& tokens,
                                  int64_t prompt_length) const override {
    const int64_t T = static_cast<int64_t>(tokens.size());
    PositionIds ids(static_cast<size_t>(position_levels()),
                    std::vector<int64_t>(static_cast<size_t>(T), 0));
    if (!coupled_) {
      for (int64_t t = 0; t < T; ++t) {
        ids[0][t] = t;
      }
      return ids;
    }
    const int64_t s = start_;
    if (scratchpad_) {
      return scratchpad().causal_ids(tokens, prompt_length, std::move(ids));
    }
    // Query: a digit's ID is s + (digits from it to the end of its run).
    const int64_t qlen = std::min(prompt_length, T);
    int64_t longest = 0;
    for (int64_t t = 1; t < qlen;) {
      if (is_digit(tokens[t])) {
        int64_t end = t;
        while (end < qlen && is_digit(tokens[end])) {
          ++end;
        }
        for (int64_t u = t; u < end; ++u) {
          ids[0][u] = s + significance(u, t, end);
        }
        longest = std::max(longest, end - t);
        t = end;
      } else {
        ids[0][t] = (tokens[t] == plus_ || tokens[t] == eq_) ? s : 0;
        ++t;
      }
    }
    // Response: k-th generated digit (1-based). Reversed: LSD first -> s + k. Plain and padded:
    // the answer length A is fixed by the query -> s + A - k + 1.
    const int64_t A = answer_length_for(longest, operands_in(tokens, qlen));
    int64_t k = 0;
    for (int64_t t = prompt_length; t < T; ++t) {
      if (!is_digit(tokens[t])) {
        ids[0][t] = 0;  // EOS (or anything else the model emits)
        continue;
      }
      ++k;
      ids[0][t] = reverse_ ? s + k : std::max<int64_t>(0, s + A - k + 1);
    }
    return ids;
  }

  int64_t max_response_length(const std::vector<int64_t>& prompt) const override {
    int64_t longest = 0, run = 0;
    for (int64_t t : prompt) {
      run = is_digit(t) ? run + 1 : (is_hint(t) ? run : 0);
      longest = std::max(longest, run);
    }
    const int64_t m = operands_in(prompt, static_cast<int64_t>(prompt.size()));
    const int64_t A = answer_length_for(longest, m);
    // Scratchpad: m+1 numbers of A digits, m arrows; else the answer's digits (each after its
    // hint). Then EOS.
    return scratchpad_ ? (m + 1) * A + m + 1 : (hints_ > 0 ? 2 * A : A) + 1;
  }

 private:
  bool is_digit(int64_t tok) const { return lengen::tasks::addition::is_digit(tok); }

  bool is_hint(int64_t tok) const { return hints_ > 0 && tok >= hint0_ && tok < hint0_ + hints_; }

  // Operands in a prompt: the '+' signs before position `end`, plus one.
  int64_t operands_in(const std::vector<int64_t>& tokens, int64_t end) const {
    int64_t m = 1;
    for (int64_t t = 0; t < end && t < static_cast<int64_t>(tokens.size()); ++t) {
      m += tokens[t] == plus_ ? 1 : 0;
    }
    return m;
  }

  // Answer digits written for a query of m operands whose longest (padded) operand run has
  // `longest` digits.
  int64_t answer_length_for(int64_t longest, int64_t m) const {
    // With pad_to answer the runs already have the answer's length.
    if (zero_pad_ && pad_to_answer_) {
      return longest;
    }
    return static_cast<int64_t>(
        max_sum_length(static_cast<size_t>(longest), static_cast<size_t>(m)));
  }

  // Builds the sequence and its IDs from the numbers (the "template" form; the causal form above
  // must agree with it on every correct response, which the tests check).
  Example make_example(const std::vector<std::string>& ops, int64_t hint_offset = 0) const {
    size_t longest = 0;
    for (const auto& x : ops) {
      longest = std::max(longest, x.size());
    }
    const std::string sum = add_decimal(ops);
    const size_t answer_len = max_sum_length(longest, ops.size());
    const size_t op_width = zero_pad_ ? (pad_to_answer_ ? answer_len : longest) : 0;
    std::string answer = zero_pad_ ? pad_left(sum, answer_len) : sum;

    if (scratchpad_) {
      return scratchpad().example(ops, longest, answer_len);
    }
    Example ex;
    ex.position_ids.assign(1, {});
    auto push = [&](int64_t tok, int64_t id, bool loss) { ex.push(tok, {id}, loss); };
    const int64_t s = start_;
    push(vocab_.bos(), 0, false);
    for (size_t i = 0; i < ops.size(); ++i) {
      const std::string x = pad_left(ops[i], op_width);
      for (size_t j = 0; j < x.size(); ++j) {  // j-th written digit
        const size_t pos = reverse_query_ ? x.size() - 1 - j : j;
        if (hints_ > 0)
          push(hint0_ + hint_offset + static_cast<int64_t>(x.size() - pos) - 1, 0, false);
        push(digit_id(x[pos]), s + static_cast<int64_t>(x.size() - pos), false);
      }
      push(i + 1 < ops.size() ? plus_ : eq_, s, false);
    }
    ex.prompt_length = ex.length();
    ex.answer_begin = ex.prompt_length;
    for (size_t k = 0; k < answer.size(); ++k) {
      // k-th written digit; its significance (1 = least) depends on the direction.
      size_t pos = reverse_ ? answer.size() - 1 - k : k;
      int64_t significance = static_cast<int64_t>(answer.size() - pos);
      if (hints_ > 0)
        push(hint0_ + hint_offset + significance - 1, 0, true);
      push(digit_id(answer[pos]), s + significance, true);
    }
    push(vocab_.eos(), 0, true);
    if (!coupled_) {
      for (int64_t t = 0; t < ex.length(); ++t) {
        ex.position_ids[0][t] = t;
      }
    }
    ex.meta["digits"] = static_cast<int64_t>(longest);
    ex.meta["operands"] = static_cast<int64_t>(ops.size());
    const auto c = lengen::decimal::carries(ops);
    ex.meta["carries"] = c.count;
    ex.meta["carry_chain"] = c.longest_chain;
    return ex;
  }

  int64_t digit_id(char c) const { return lengen::tasks::addition::digit_id(c); }

  lengen::tasks::addition::ScratchpadFormat scratchpad() const {
    return {vocab_.bos(),
            vocab_.eos(),
            plus_,
            eq_,
            arrow_,
            start_,
            zero_pad_,
            reverse_,
            reverse_query_,
            coupled_};
  }

  int64_t operands_;

  // Significance (1 = least) of the digit at u in the query run [t, end).
  int64_t significance(int64_t u, int64_t t, int64_t end) const {
    return reverse_query_ ? u - t + 1 : end - u;
  }

  bool same_length_, zero_pad_, pad_to_answer_, reverse_, reverse_query_, coupled_, mixed_lengths_,
      scratchpad_;
  int64_t start_;       ///< s: the ID of `+` and `=`, digits s + significance (abacus: 0)
  int64_t hints_;       ///< N index hints (0: none)
  int64_t hint0_ = -1;  ///< token ID of hint 0
  std::pair<int64_t, int64_t> train_, eval_, train_ops_, eval_ops_;
  lengen::Vocabulary vocab_;
  int64_t plus_ = 0, eq_ = 0, arrow_ = -1;
};

void register_addition(lengen::Registrar& r) {
  r.add_task<Addition>();
}

}  // namespace

LENGEN_PLUGIN("addition", "0.1.0", register_addition)
