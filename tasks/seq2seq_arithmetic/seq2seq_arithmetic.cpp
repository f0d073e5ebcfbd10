// Successor, addition, N x 1 multiplication and parity in the encoding of Duan & Shi 2023
// ("From Interpolation to Extrapolation", arXiv:2310.11984, sections 3.2-3.3 and A.4), for an
// encoder-decoder: the paper's 15 tokens {0-9, +, *, $ (SOS), & (EOS), @ (PAD)}, operands
// left-padded with zeros to a fixed width W, the output zero-padded to W and reversed
// (lowest digit first):
//   addition, W = 4:   source 0 1 2 3 + 0 7 4 8        target $ 1 7 8 0 &   (123 + 748 = 871)
//   successor, W = 4:  source 0 1 2 3                  target $ 4 2 1 0 &
//   N x 1, W = 4:      source 0 1 2 3 * 6              target $ 8 3 7 0 &   (738)
//   parity, W = 4:     source 0 1 1 0 (x_4 .. x_1)     target $ 0 1 0 0 &   (y_1 = x_1,
//                                                       y_i = y_{i-1} xor x_i)
// `interleave: true` is the aligned input of the paper's A.4 (its windowed-bias experiments):
//   `+ a_W b_W ... a_1 b_1` and `* a_W b ... a_1 b`.
// `markers: true` wraps the source in SOS and EOS as the authors' released code does
// (`tokenize_num_str`: SOS + digits + EOS): successor, W = 4: source $ 0 1 2 3 &.
//
// Position IDs (one level) are significances, so the windowed bias needs no knowledge of the
// layout: a source digit of significance r (x_r, a_r, b_r, counted from the right from 1) has
// ID r, the N x 1 digit b ID 1, the operator 0 (W + 1 when interleaved: it comes first), the
// source markers W + 1 (SOS, before the most significant digit) and 0 (EOS, after x_1); the
// target token that predicts y_r (SOS for r = 1, else y_{r-1}) has ID r, EOS W + 2. As one
// sequence (decoder layouts) an example is `$ source $ y_1 .. y_W &` (the first `$` ID 0).
//
// Training (section 3.3): a random permutation of the integers [0, train_max] split
// train_fraction : rest (7:1); operands come from the training part (both independently for
// addition), the N x 1 digit uniform in 0..9; parity writes them in binary. `train_lengths:
// digits` draws an operand's length uniformly first (a search option, not the paper's).
// Evaluation at L digits (bits): operands of exactly L digits (the digit of N x 1 is still 0..9).
#include "schema.h"

#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/task/decimal.h"
#include "lengen/task/task.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace {

using lengen::Example;
using lengen::OptionSpec;
using lengen::PositionIds;
namespace decimal = lengen::decimal;

enum class Op { kSuccessor, kAddition, kNx1, kParity };

Op parse_op(const std::string& s) {
  if (s == "successor")
    return Op::kSuccessor;
  if (s == "addition")
    return Op::kAddition;
  if (s == "nx1")
    return Op::kNx1;
  return Op::kParity;
}

std::string to_binary(uint64_t v) {
  std::string out;
  do {
    out.insert(out.begin(), static_cast<char>('0' + (v & 1)));
    v >>= 1;
  } while (v > 0);
  return out;
}

class Seq2SeqArithmetic final : public lengen::Task {
 public:
  static lengen::ComponentSpec spec() { return lengen::tasks::seq2seq_arithmetic_schema(); }

  Seq2SeqArithmetic(const lengen::Options& o, const lengen::TaskContext&)
      : op_(parse_op(o.get_string("operation"))),
        interleave_(o.get_bool("interleave")),
        markers_(o.get_bool("markers")),
        eval_(o.get_int_range("eval_digits")),
        vocab_({"@", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "+", "*", "$", "&"},
               "@",
               "$",
               "&") {
    // Interleaving aligns two operands: successor and parity (one operand) are unchanged.
    if (op_ == Op::kSuccessor || op_ == Op::kParity)
      interleave_ = false;
    const uint64_t train_max = static_cast<uint64_t>(o.get_int("train_max"));
    const int64_t train_len = static_cast<int64_t>(binary() ? to_binary(train_max).size()
                                                            : std::to_string(train_max).size());
    // The largest training output: successor, sum and N x 1 product may need one more digit.
    const uint64_t out_max = op_ == Op::kSuccessor  ? train_max + 1
                             : op_ == Op::kAddition ? 2 * train_max
                             : op_ == Op::kNx1      ? 9 * train_max
                                                    : train_max;
    const int64_t headroom = binary() ? 0 : 1;
    width_ =
        o.get_int("width") > 0 ? o.get_int("width") : std::max(eval_.second + headroom, train_len);
    if (static_cast<int64_t>(std::to_string(out_max).size()) > width_ || train_len > width_) {
      o.fail(
          "width",
          fmt::format("training numbers up to {} (and their outputs) do not fit {} digits; raise "
                      "task.width",
                      train_max,
                      width_));
    }
    if (eval_.second + headroom > width_) {
      o.fail("eval_digits",
             fmt::format("{}-digit operands need a width of at least {} (task.width is {})",
                         eval_.second,
                         eval_.second + headroom,
                         width_));
    }
    train_len_ = train_len;
    // The permutation and its training part, kept sorted: the part, not the order, matters.
    std::vector<uint32_t> perm(train_max + 1);
    std::iota(perm.begin(), perm.end(), 0u);
    lengen::Rng rng(lengen::mix_seed(static_cast<uint64_t>(o.get_int("split_seed")), {0xD5A1}));
    for (int64_t i = static_cast<int64_t>(perm.size()) - 1; i > 0; --i) {
      std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(rng.uniform_int(0, i))]);
    }
    const auto n_train =
        static_cast<size_t>(o.get_float("train_fraction") * static_cast<double>(perm.size()));
    if (n_train == 0)
      o.fail("train_fraction", "leaves no training numbers");
    perm.resize(n_train);
    train_ = std::move(perm);
    if (o.get_string("train_lengths") == "digits") {
      // The training numbers of each length; the empty lengths (none in the training part) are left
      // out.
      std::map<size_t, std::vector<uint32_t>> by_length;
      for (uint32_t v : train_)
        by_length[binary() ? to_binary(v).size() : std::to_string(v).size()].push_back(v);
      for (auto& [len, numbers] : by_length)
        by_length_.push_back(std::move(numbers));
    }
    op_token_ = vocab_.id(op_ == Op::kNx1 ? "*" : "+");
  }

  const lengen::Vocabulary& vocabulary() const override { return vocab_; }

  int64_t position_levels() const override { return 1; }

  Example sample_train(lengen::Rng& rng) const override {
    auto pick = [&] {
      const auto& from = by_length_.empty() ? train_
                                            : by_length_[static_cast<size_t>(rng.uniform_int(
                                                  0, static_cast<int64_t>(by_length_.size()) - 1))];
      const uint32_t v =
          from[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(from.size()) - 1))];
      return binary() ? to_binary(v) : std::to_string(v);
    };
    const std::string a = pick();
    const std::string b = op_ == Op::kAddition ? pick()
                          : op_ == Op::kNx1    ? std::to_string(rng.uniform_int(0, 9))
                                               : "";
    return make_example(a, b);
  }

  std::vector<lengen::GridAxis> grid_axes() const override {
    return {
        {"digits",
         binary() ? "input length in bits (exactly L bits)" : "operand length (exactly L digits)",
         eval_.first,
         eval_.second,
         1,
         train_len_}};
  }

  Example sample_eval(const lengen::GridCell& cell, lengen::Rng& rng) const override {
    auto it = cell.find("digits");
    LENGEN_CHECK(it != cell.end(), "seq2seq_arithmetic: grid cell has no 'digits'");
    const int64_t L = it->second;
    const int64_t need = L + (binary() ? 0 : 1);
    if (L < 1 || need > width_) {
      throw lengen::Error(
          fmt::format("seq2seq_arithmetic: {}-digit operands do not fit the fixed width {}; "
                      "raise task.width to at least {}",
                      L,
                      width_,
                      need));
    }
    auto number = [&] {
      if (!binary())
        return decimal::random_number(L, rng);
      std::string x = "1";
      for (int64_t i = 1; i < L; ++i)
        x += static_cast<char>('0' + rng.uniform_int(0, 1));
      return x;
    };
    const std::string a = number();
    const std::string b = op_ == Op::kAddition ? number()
                          : op_ == Op::kNx1    ? std::to_string(rng.uniform_int(0, 9))
                                               : "";
    Example ex = make_example(a, b);
    ex.meta["digits"] = L;
    return ex;
  }

  Example parse_query(const std::string& text) const override {
    std::string q;
    for (char c : text) {
      if (c != ' ')
        q += c == 'x' ? '*' : c;
    }
    const std::string op = vocab_.token(op_token_);
    const size_t at = q.find(op);
    const bool two = op_ == Op::kAddition || op_ == Op::kNx1;
    const std::string a = two && at != std::string::npos ? q.substr(0, at) : q;
    const std::string b = two && at != std::string::npos ? q.substr(at + 1) : "";
    const char* digits = binary() ? "01" : "0123456789";
    auto ok = [&](const std::string& x) {
      return !x.empty() && x.find_first_not_of(digits) == std::string::npos;
    };
    if (!ok(a) || (two && !ok(b)) || (op_ == Op::kNx1 && b.size() != 1)) {
      throw lengen::Error(fmt::format("seq2seq_arithmetic: '{}' is not a query like {}",
                                      text,
                                      op_ == Op::kAddition ? "123+748"
                                      : op_ == Op::kNx1    ? "123*6"
                                      : binary()           ? "10110"
                                                           : "123"));
    }
    const std::string sa = decimal::strip_zeros(a);
    if (static_cast<int64_t>(sa.size()) + (binary() ? 0 : 1) > width_) {
      throw lengen::Error(fmt::format(
          "seq2seq_arithmetic: '{}' does not fit the fixed width {} (task.width)", text, width_));
    }
    return make_example(sa, two ? decimal::strip_zeros(b) : "");
  }

  PositionIds causal_position_ids(const std::vector<int64_t>& tokens,
                                  int64_t prompt_length) const override {
    PositionIds ids(1);
    const int64_t source = source_length();
    for (int64_t t = 0; t < static_cast<int64_t>(tokens.size()); ++t) {
      ids[0].push_back(t == 0 ? 0 : t <= source ? source_id(t - 1) : t - prompt_length + 2);
    }
    return ids;
  }

  int64_t max_response_length(const std::vector<int64_t>&) const override { return width_ + 1; }

  std::string render(const std::vector<int64_t>& tokens) const override {
    std::string out;
    for (int64_t t : tokens)
      out += vocab_.token(t);
    return out;
  }

  // The paper's pair: the source is the input alone (`$ input &` with markers), the target
  // `$ y_1 .. y_W &`.
  lengen::Seq2SeqExample to_seq2seq(const Example& ex) const override {
    const int64_t S = source_length();
    LENGEN_CHECK(ex.prompt_length == S + 2 && ex.length() == S + 2 + width_ + 1,
                 "seq2seq_arithmetic: not an example of this task ({} tokens)",
                 ex.length());
    lengen::Seq2SeqExample out;
    out.source.assign(ex.tokens.begin() + 1, ex.tokens.begin() + 1 + S);
    out.source_ids = {
        std::vector<int64_t>(ex.position_ids[0].begin() + 1, ex.position_ids[0].begin() + 1 + S)};
    out.target.assign(ex.tokens.begin() + S + 1, ex.tokens.end());
    out.target_ids = {
        std::vector<int64_t>(ex.position_ids[0].begin() + S + 1, ex.position_ids[0].end())};
    out.loss_mask.assign(ex.loss_mask.begin() + S + 1, ex.loss_mask.end());
    return out;
  }

 private:
  bool binary() const { return op_ == Op::kParity; }

  int64_t source_length() const { return input_length() + (markers_ ? 2 : 0); }

  // Tokens of the input between the markers.
  int64_t input_length() const {
    switch (op_) {
      case Op::kSuccessor:
      case Op::kParity:
        return width_;
      case Op::kAddition:
        return 2 * width_ + 1;
      case Op::kNx1:
        return interleave_ ? 2 * width_ + 1 : width_ + 2;
    }
    return 0;
  }

  // ID (significance) of source token s (0-based).
  int64_t source_id(int64_t s) const {
    if (!markers_)
      return input_id(s);
    return s == 0 ? width_ + 1 : s == input_length() + 1 ? 0 : input_id(s - 1);
  }

  // ID of input token s (0-based, markers not counted).
  int64_t input_id(int64_t s) const {
    const int64_t W = width_;
    switch (op_) {
      case Op::kSuccessor:
      case Op::kParity:
        return W - s;
      case Op::kAddition:
        if (interleave_)
          return s == 0 ? W + 1 : W - (s - 1) / 2;
        return s < W ? W - s : s == W ? 0 : 2 * W + 1 - s;
      case Op::kNx1:
        if (interleave_)
          return s == 0 ? W + 1 : W - (s - 1) / 2;
        return s < W ? W - s : s == W ? 0 : 1;
    }
    return 0;
  }

  std::string output(const std::string& a, const std::string& b) const {
    switch (op_) {
      case Op::kSuccessor:
        return decimal::add({a, "1"});
      case Op::kAddition:
        return decimal::add({a, b});
      case Op::kNx1:
        return decimal::multiply(a, b);
      case Op::kParity: {
        // y_1 = x_1 (the last bit), y_i = y_{i-1} xor x_i; written y_1 first, W bits (leading
        // zero bits of the padded input keep the running parity).
        const std::string x = decimal::pad_left(a, static_cast<size_t>(width_));
        std::string y;
        int bit = 0;
        for (int64_t i = width_ - 1; i >= 0; --i) {
          bit ^= x[static_cast<size_t>(i)] - '0';
          y += static_cast<char>('0' + bit);
        }
        return y;
      }
    }
    return {};
  }

  Example make_example(const std::string& a, const std::string& b) const {
    const size_t W = static_cast<size_t>(width_);
    std::string y = output(a, b);
    if (!binary()) {
      LENGEN_CHECK(y.size() <= W, "seq2seq_arithmetic: output {} longer than the width {}", y, W);
      y = decimal::pad_left(y, W);
      std::reverse(y.begin(), y.end());
    }
    std::vector<int64_t> src;
    auto digit = [&](char c) { return vocab_.id(std::string(1, c)); };
    const std::string pa = decimal::pad_left(a, W);
    if (interleave_) {
      src.push_back(op_token_);
      const std::string pb = op_ == Op::kAddition ? decimal::pad_left(b, W) : std::string(W, b[0]);
      for (size_t i = 0; i < W; ++i) {
        src.push_back(digit(pa[i]));
        src.push_back(digit(pb[i]));
      }
    } else {
      for (char c : pa)
        src.push_back(digit(c));
      if (op_ == Op::kAddition || op_ == Op::kNx1) {
        src.push_back(op_token_);
        for (char c : op_ == Op::kAddition ? decimal::pad_left(b, W) : b)
          src.push_back(digit(c));
      }
    }
    if (markers_) {
      src.insert(src.begin(), vocab_.bos());
      src.push_back(vocab_.eos());
    }
    Example ex;
    ex.position_ids.assign(1, {});
    ex.push(vocab_.bos(), {0}, false);
    for (size_t s = 0; s < src.size(); ++s)
      ex.push(src[s], {source_id(static_cast<int64_t>(s))}, false);
    ex.push(vocab_.bos(), {1}, false);  // the decoder's start token (SOS)
    ex.prompt_length = ex.answer_begin = ex.length();
    for (size_t r = 0; r < W; ++r)
      ex.push(digit(y[r]), {static_cast<int64_t>(r) + 2}, true);
    ex.push(vocab_.eos(), {width_ + 2}, true);
    ex.meta["digits"] = static_cast<int64_t>(std::max(a.size(), b.size()));
    return ex;
  }

  Op op_;
  bool interleave_, markers_;
  std::pair<int64_t, int64_t> eval_;
  int64_t width_ = 0, train_len_ = 0;
  int64_t op_token_ = 0;
  std::vector<uint32_t> train_;
  std::vector<std::vector<uint32_t>>
      by_length_;  ///< train_lengths: digits: the training numbers per length
  lengen::Vocabulary vocab_;
};

void register_seq2seq_arithmetic(lengen::Registrar& r) {
  r.add_task<Seq2SeqArithmetic>();
}

}  // namespace

LENGEN_PLUGIN("seq2seq_arithmetic", "0.1.0", register_seq2seq_arithmetic)
