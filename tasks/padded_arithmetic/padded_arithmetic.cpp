// Arithmetic in the encoding of Jelassi et al. 2023 (arXiv:2306.15400, section 2.1), for an
// encoder-only Transformer with a per-position classifier. Operands are written most
// significant digit first and right-padded with <PAD> to the test width w; the output is right-
// padded to n_out (w+1 for addition, 2w for multiplication); the operation is a token:
//   12+39 with w = 3:   input  1 2 <PAD> + 3 9 <PAD>     labels on the first n_out = 4
//                       inputs 5 1 <PAD> <PAD>
// Operations: add (+), mod_add (%, modulus not in the input), mul (x, N x k: the second operand
// below 10^k), mod_mul (*), elementwise_add (+, digit-wise without carries).
//
// Training: the first operand comes from a fixed set of `train_set_size` values drawn once
// (seeded by `train_set_seed`), the second is fresh every time; both uniform below 10^n
// (n = train_digits, a value or a range: each fixed-set value draws its own n, each pair draws
// the second operand's; `paired_lengths` takes the first operand among the values drawn with the
// pair's n, so both share it). Evaluation at n digits: both operands uniform below
// 10^n (the second below 10^k for N x k), padded to the same width w. `exact_digits` draws
// exactly n (k) digits instead, in training and test.
//
// `reverse` (not the paper's): every number, operands and answer, is written least significant
// digit first and still right-padded, so digit i of each number sits i positions after its
// number's start and the operands are aligned by significance whatever their lengths:
//   12+39 with w = 3, reverse:   input  2 1 <PAD> + 9 3 <PAD>   labels  1 5 <PAD> <PAD>
// Queries (parse_query, `lengen decode`) are written as usual, most significant digit first.
//
// As one sequence (decoder layouts) an example is `$ x1 op x2 = y $` with the padded numbers;
// Task::to_labeled gives the paper's input `x1 op x2` (2w + 1 tokens, IDs 0..2w) with the
// answer on the first n_out positions, and from_labeled reads it back from there. The
// vocabulary is the paper's 15 tokens plus `=`, `$` (BOS/EOS, never in the encoder's input)
// and `_`, the framework's batch filler (never in an example; <PAD> is a real token here).
#include "schema.h"

#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/task/decimal.h"
#include "lengen/task/task.h"

#include <algorithm>
#include <cstdlib>

namespace {

using lengen::Example;
using lengen::OptionSpec;
using lengen::PositionIds;
namespace decimal = lengen::decimal;

enum class Op { kAdd, kModAdd, kMul, kModMul, kElementwiseAdd };

Op parse_op(const std::string& s) {
  if (s == "add")
    return Op::kAdd;
  if (s == "mod_add")
    return Op::kModAdd;
  if (s == "mul")
    return Op::kMul;
  if (s == "mod_mul")
    return Op::kModMul;
  return Op::kElementwiseAdd;
}

class PaddedArithmetic final : public lengen::Task {
 public:
  static lengen::ComponentSpec spec() { return lengen::tasks::padded_arithmetic_schema(); }

  PaddedArithmetic(const lengen::Options& o, const lengen::TaskContext&)
      : op_(parse_op(o.get_string("operation"))),
        modulus_(o.get_int("modulus")),
        train_(o.get_int_range("train_digits")),
        exact_(o.get_bool("exact_digits")),
        reverse_(o.get_bool("reverse")),
        paired_(o.get_bool("paired_lengths")),
        vocab_({"_",
                "<PAD>",
                "0",
                "1",
                "2",
                "3",
                "4",
                "5",
                "6",
                "7",
                "8",
                "9",
                "+",
                "%",
                "×",
                "*",
                "=",
                "$"},
               "_",
               "$",
               "$") {
    const bool mul = op_ == Op::kMul;
    width_ = o.get_int("width") > 0 ? o.get_int("width") : (mul ? 35 : 20);
    second_ = o.get_int("second_digits") >= 0 ? o.get_int("second_digits") : (mul ? 3 : 0);
    if (train_.second > width_) {
      o.fail("train_digits",
             fmt::format("training operands of {} digits do not fit the padded width {} "
                         "(task.width)",
                         train_.second,
                         width_));
    }
    if (second_ > width_) {
      o.fail("second_digits",
             fmt::format("a {}-digit second operand does not fit the padded width {} "
                         "(task.width)",
                         second_,
                         width_));
    }
    const auto eval = o.get_int_range("eval_digits");
    eval_ = eval.second == 0 ? std::make_pair<int64_t, int64_t>(1, int64_t{width_}) : eval;
    if (eval_.first < 1 || eval_.second > width_) {
      o.fail("eval_digits", fmt::format("evaluation lengths must lie in [1, width = {}]", width_));
    }
    switch (op_) {
      case Op::kAdd:
        n_out_ = width_ + 1;
        break;
      case Op::kMul:
        n_out_ = 2 * width_;
        break;
      case Op::kElementwiseAdd:
        n_out_ = width_;
        break;
      case Op::kModAdd:
      case Op::kModMul:
        n_out_ = static_cast<int64_t>(std::to_string(modulus_ - 1).size());
        break;
    }
    pad_ = vocab_.id("<PAD>");
    op_token_ = vocab_.id(op_ == Op::kModAdd   ? "%"
                          : op_ == Op::kMul    ? "×"
                          : op_ == Op::kModMul ? "*"
                                               : "+");
    eq_ = vocab_.id("=");
    const int64_t n = o.get_int("train_set_size");
    lengen::Rng rng(lengen::mix_seed(static_cast<uint64_t>(o.get_int("train_set_seed")), {0x5E7}));
    by_length_.resize(static_cast<size_t>(train_.second + 1));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t digits = rng.uniform_int(train_.first, train_.second);
      by_length_[static_cast<size_t>(digits)].push_back(train_set_.size());
      train_set_.push_back(operand(digits, rng));
    }
    for (int64_t d = train_.first; paired_ && n > 0 && d <= train_.second; ++d) {
      if (by_length_[static_cast<size_t>(d)].empty()) {
        o.fail("train_set_size",
               fmt::format("{} values leave no first operand drawn below 10^{} for "
                           "paired_lengths; raise train_set_size",
                           n,
                           d));
      }
    }
  }

  const lengen::Vocabulary& vocabulary() const override { return vocab_; }

  int64_t position_levels() const override { return 1; }

  Example sample_train(lengen::Rng& rng) const override {
    const int64_t n = rng.uniform_int(train_.first, train_.second);
    std::string a;
    if (train_set_.empty()) {
      a = operand(n, rng);
    } else if (paired_) {
      const auto& same = by_length_[static_cast<size_t>(n)];
      a = train_set_[same[static_cast<size_t>(
          rng.uniform_int(0, static_cast<int64_t>(same.size()) - 1))]];
    } else {
      a = train_set_[static_cast<size_t>(
          rng.uniform_int(0, static_cast<int64_t>(train_set_.size()) - 1))];
    }
    return make_example(a, operand(second_ > 0 ? second_ : n, rng));
  }

  std::vector<lengen::GridAxis> grid_axes() const override {
    return {{"digits",
             "operand length n: operands below 10^n (the second below 10^k for N x k)",
             eval_.first,
             eval_.second,
             1,
             train_.second}};
  }

  Example sample_eval(const lengen::GridCell& cell, lengen::Rng& rng) const override {
    auto it = cell.find("digits");
    LENGEN_CHECK(it != cell.end(), "padded_arithmetic: grid cell has no 'digits'");
    const int64_t n = it->second;
    if (n < 1 || n > width_) {
      throw lengen::Error(
          fmt::format("padded_arithmetic: {}-digit operands do not fit the padded "
                      "width {}; raise task.width to at least {}",
                      n,
                      width_,
                      n));
    }
    std::string a = operand(n, rng);
    std::string b = operand(second_ > 0 ? second_ : n, rng);
    Example ex = make_example(a, b);
    ex.meta["digits"] = n;
    return ex;
  }

  Example parse_query(const std::string& text) const override {
    std::string q;
    for (size_t i = 0; i < text.size();) {
      if (text.compare(i, 5, "<PAD>") == 0) {
        i += 5;
      } else if (text[i] == ' ' || text[i] == '=') {
        ++i;
      } else {
        q += text[i++];
      }
    }
    const std::string op = vocab_.token(op_token_);
    size_t at = q.find(op);
    if (at == std::string::npos && op_ == Op::kMul) {
      at = q.find('x');
      if (at != std::string::npos)
        q.replace(at, 1, op);
    }
    const std::string a = at == std::string::npos ? "" : q.substr(0, at);
    const std::string b = at == std::string::npos ? "" : q.substr(at + op.size());
    auto digits = [](const std::string& x) {
      return !x.empty() && x.find_first_not_of("0123456789") == std::string::npos;
    };
    if (!digits(a) || !digits(b)) {
      throw lengen::Error(
          fmt::format("padded_arithmetic: '{}' is not a query like 12{}39", text, op));
    }
    if (static_cast<int64_t>(std::max(a.size(), b.size())) > width_) {
      throw lengen::Error(
          fmt::format("padded_arithmetic: '{}' has more digits than the padded width {} "
                      "(task.width)",
                      text,
                      width_));
    }
    return make_example(decimal::strip_zeros(a), decimal::strip_zeros(b));
  }

  PositionIds causal_position_ids(const std::vector<int64_t>& tokens, int64_t) const override {
    PositionIds ids(1);
    for (size_t t = 0; t < tokens.size(); ++t)
      ids[0].push_back(static_cast<int64_t>(t));
    return ids;
  }

  int64_t max_response_length(const std::vector<int64_t>&) const override { return n_out_ + 1; }

  std::string render(const std::vector<int64_t>& tokens) const override {
    std::string out;
    for (int64_t t : tokens) {
      out += (out.empty() ? "" : " ") + vocab_.token(t);
    }
    return out;
  }

  // The paper's layout: input `x1 op x2`, the answer labelled on its first n_out positions.
  lengen::LabeledExample to_labeled(const Example& ex) const override {
    const int64_t in = 2 * width_ + 1;
    LENGEN_CHECK(ex.prompt_length == in + 2 && ex.length() == in + 2 + n_out_ + 1,
                 "padded_arithmetic: not an example of this task ({} tokens)",
                 ex.length());
    lengen::LabeledExample lx;
    lx.tokens.assign(ex.tokens.begin() + 1, ex.tokens.begin() + 1 + in);
    lx.ids.assign(1, {});
    for (int64_t t = 0; t < in; ++t)
      lx.ids[0].push_back(t);
    lx.labels.assign(static_cast<size_t>(in), vocab_.pad());
    lx.label_mask.assign(static_cast<size_t>(in), 0);
    for (int64_t j = 0; j < n_out_; ++j) {
      lx.labels[j] = ex.tokens[ex.prompt_length + j];
      lx.label_mask[j] = 1;
    }
    lx.slot_begin = 0;
    return lx;
  }

  std::vector<int64_t> from_labeled(const lengen::LabeledExample& lx,
                                    const std::vector<int64_t>& predicted) const override {
    LENGEN_CHECK(static_cast<int64_t>(predicted.size()) == lx.length() && lx.length() >= n_out_,
                 "padded_arithmetic: {} predictions for {} positions",
                 predicted.size(),
                 lx.length());
    std::vector<int64_t> out(predicted.begin(), predicted.begin() + n_out_);
    out.push_back(vocab_.eos());
    return out;
  }

 private:
  // Uniform below 10^digits (or with exactly `digits` digits under exact_digits), as a decimal
  // string without leading zeros; 0 is redrawn (operands are positive integers).
  std::string operand(int64_t digits, lengen::Rng& rng) const {
    for (;;) {
      std::string x =
          exact_ ? decimal::random_number(digits, rng) : decimal::random_below_power(digits, rng);
      if (x != "0")
        return x;
    }
  }

  std::string answer(const std::string& a, const std::string& b) const {
    switch (op_) {
      case Op::kAdd:
        return decimal::add({a, b});
      case Op::kMul:
        return decimal::multiply(a, b);
      case Op::kElementwiseAdd:
        return decimal::add_digitwise(a, b);
      case Op::kModAdd:
        return std::to_string((decimal::mod(a, modulus_) + decimal::mod(b, modulus_)) % modulus_);
      case Op::kModMul:
        return std::to_string((decimal::mod(a, modulus_) * decimal::mod(b, modulus_)) % modulus_);
    }
    return {};
  }

  Example make_example(const std::string& a, const std::string& b) const {
    const std::string y = answer(a, b);
    LENGEN_CHECK(static_cast<int64_t>(y.size()) <= n_out_,
                 "padded_arithmetic: answer {} longer than n_out {}",
                 y,
                 n_out_);
    Example ex;
    ex.position_ids.assign(1, {});
    int64_t t = 0;
    auto push = [&](int64_t tok, bool loss) { ex.push(tok, {t++}, loss); };
    auto number = [&](const std::string& x, int64_t width, bool loss) {
      const auto size = static_cast<int64_t>(x.size());
      for (int64_t i = 0; i < width; ++i) {
        const char digit = i < size ? x[static_cast<size_t>(reverse_ ? size - 1 - i : i)] : 0;
        push(i < size ? vocab_.id(std::string(1, digit)) : pad_, loss);
      }
    };
    push(vocab_.bos(), false);
    number(a, width_, false);
    push(op_token_, false);
    number(b, width_, false);
    push(eq_, false);
    ex.prompt_length = ex.answer_begin = ex.length();
    number(y, n_out_, true);
    push(vocab_.eos(), true);
    ex.meta["digits"] = static_cast<int64_t>(std::max(a.size(), b.size()));
    // Operands of different lengths are misaligned in this encoding (both start at the left),
    // unless `reverse` writes them units first.
    ex.meta["length_gap"] =
        std::abs(static_cast<int64_t>(a.size()) - static_cast<int64_t>(b.size()));
    if (op_ == Op::kAdd) {
      const auto c = decimal::carries({a, b});
      ex.meta["carries"] = c.count;
      ex.meta["carry_chain"] = c.longest_chain;
      // 1 when the sum has one digit more than the longer operand: the answer's carry-out slot,
      // the first position past both operands, holds a 1 rather than <PAD>.
      ex.meta["carry_out"] = y.size() > std::max(a.size(), b.size()) ? 1 : 0;
    }
    return ex;
  }

  Op op_;
  int64_t modulus_;
  std::pair<int64_t, int64_t> train_, eval_;
  bool exact_;
  bool reverse_;
  bool paired_;
  int64_t width_ = 0, second_ = 0, n_out_ = 0;
  int64_t pad_ = 0, op_token_ = 0, eq_ = 0;
  std::vector<std::string> train_set_;
  std::vector<std::vector<size_t>>
      by_length_;  // indices into train_set_ by the n each was drawn with
  lengen::Vocabulary vocab_;
};

void register_padded_arithmetic(lengen::Registrar& r) {
  r.add_task<PaddedArithmetic>();
}

}  // namespace

LENGEN_PLUGIN("padded_arithmetic", "0.1.0", register_padded_arithmetic)
