// Parity (Cho et al. 2025, arXiv:2410.15787, section 3): is the number of 1's in a bit string
// odd? `$ x_1 ... x_n = a $`, or with the cumulative-parity scratchpad of Anil et al. 2022,
// `$ x_1 ... x_n = s_1 ... s_n $` where s_k = x_1 xor ... xor x_k (the last bit is the answer).
// Coupled IDs (scratchpad only): the k-th query bit and the k-th scratchpad bit share s+k,
// `=` has s, BOS/EOS 0; the paper's example `0101=0110` has 234512345 (s = 1).
// The paper reports the accuracy of the answer token only (eval.metric: answer).
#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/task/task.h"

namespace {

using lengen::Example;
using lengen::OptionSpec;
using lengen::PositionIds;

class Parity final : public lengen::Task {
 public:
  static lengen::ComponentSpec spec() {
    return {"task",
            "parity",
            "parity of a bit string `0101=0`, optionally with the cumulative-parity scratchpad "
            "`0101=0110` and coupled IDs",
            {OptionSpec::boolean("scratchpad",
                                 "write the running parity of every prefix; the last "
                                 "bit is the answer")
                 .with_default(false),
             OptionSpec::string("position_ids",
                                "coupled: k-th query bit and k-th scratchpad bit "
                                "share an ID (needs the scratchpad); sequential: "
                                "0, 1, 2, ...")
                 .with_default("sequential")
                 .one_of({"coupled", "sequential"}),
             OptionSpec::int_list("train_bits", "[lo, hi]: query lengths seen in training")
                 .with_default(std::vector<int64_t>{1, 20})
                 .at_least(1),
             OptionSpec::int_list("eval_bits", "[lo, hi]: default range of the 'bits' grid axis")
                 .with_default(std::vector<int64_t>{1, 100})
                 .at_least(1)}};
  }

  Parity(const lengen::Options& o, const lengen::TaskContext&)
      : scratchpad_(o.get_bool("scratchpad")),
        coupled_(o.get_string("position_ids") == "coupled"),
        train_(o.get_int_range("train_bits")),
        eval_(o.get_int_range("eval_bits")),
        vocab_({"<pad>", "$", "0", "1", "="}, "<pad>", "$", "$") {
    if (coupled_ && !scratchpad_) {
      o.fail("position_ids",
             "coupled parity IDs pair each query bit with its scratchpad bit: set "
             "scratchpad: true, or position_ids: sequential");
    }
    zero_ = vocab_.id("0");
    one_ = vocab_.id("1");
    eq_ = vocab_.id("=");
  }

  const lengen::Vocabulary& vocabulary() const override { return vocab_; }

  int64_t position_levels() const override { return 1; }

  Example sample_train(lengen::Rng& rng) const override {
    return make_example(random_bits(rng.uniform_int(train_.first, train_.second), rng));
  }

  std::vector<lengen::GridAxis> grid_axes() const override {
    return {{"bits", "query length", eval_.first, eval_.second, train_.first, train_.second}};
  }

  Example sample_eval(const lengen::GridCell& cell, lengen::Rng& rng) const override {
    auto it = cell.find("bits");
    LENGEN_CHECK(it != cell.end(), "parity: grid cell has no 'bits'");
    LENGEN_CHECK(it->second >= 1, "parity: bits must be >= 1, got {}", it->second);
    return make_example(random_bits(it->second, rng));
  }

  Example parse_query(const std::string& text) const override {
    std::string q;
    for (char c : text) {
      if (c != ' ')
        q += c;
    }
    if (!q.empty() && q.back() == '=')
      q.pop_back();
    if (q.empty() || q.find_first_not_of("01") != std::string::npos) {
      throw lengen::Error(
          fmt::format("parity: '{}' is not a query like 0101 (a string of 0s and 1s)", text));
    }
    return make_example(q);
  }

  PositionIds causal_position_ids(const std::vector<int64_t>& tokens,
                                  int64_t prompt_length) const override {
    const int64_t T = static_cast<int64_t>(tokens.size());
    PositionIds ids(1, std::vector<int64_t>(static_cast<size_t>(T), 0));
    if (!coupled_) {
      for (int64_t t = 0; t < T; ++t)
        ids[0][t] = t;
      return ids;
    }
    const int64_t s = 1;
    // Query: the k-th bit (counting from the left) has s + k; `=` has s.
    int64_t k = 0;
    for (int64_t t = 1; t < std::min(prompt_length, T); ++t) {
      if (is_bit(tokens[t])) {
        ids[0][t] = s + ++k;
      } else if (tokens[t] == eq_) {
        ids[0][t] = s;
      }
    }
    // Response: the k-th generated bit has s + k; EOS (or anything else) 0.
    k = 0;
    for (int64_t t = prompt_length; t < T; ++t) {
      ids[0][t] = is_bit(tokens[t]) ? s + ++k : 0;
    }
    return ids;
  }

  int64_t max_response_length(const std::vector<int64_t>& prompt) const override {
    int64_t n = 0;
    for (int64_t t : prompt)
      n += is_bit(t) ? 1 : 0;
    return (scratchpad_ ? n : 1) + 1;
  }

 private:
  bool is_bit(int64_t tok) const { return tok == zero_ || tok == one_; }

  static std::string random_bits(int64_t n, lengen::Rng& rng) {
    std::string x;
    for (int64_t i = 0; i < n; ++i)
      x.push_back(rng.uniform_int(0, 1) ? '1' : '0');
    return x;
  }

  Example make_example(const std::string& bits) const {
    Example ex;
    ex.position_ids.assign(1, {});
    auto push = [&](int64_t tok, int64_t id, bool loss) { ex.push(tok, {id}, loss); };
    const int64_t s = 1;
    push(vocab_.bos(), 0, false);
    for (size_t k = 0; k < bits.size(); ++k) {
      push(bits[k] == '1' ? one_ : zero_, s + static_cast<int64_t>(k) + 1, false);
    }
    push(eq_, s, false);
    ex.prompt_length = ex.length();
    int parity = 0;
    for (size_t k = 0; k < bits.size(); ++k) {
      parity ^= bits[k] == '1' ? 1 : 0;
      if (scratchpad_ || k + 1 == bits.size()) {
        push(parity ? one_ : zero_, s + static_cast<int64_t>(k) + 1, true);
      }
    }
    ex.answer_begin = ex.length() - 1;  // the last bit before EOS
    push(vocab_.eos(), 0, true);
    if (!coupled_) {
      for (int64_t t = 0; t < ex.length(); ++t)
        ex.position_ids[0][t] = t;
    }
    ex.meta["bits"] = static_cast<int64_t>(bits.size());
    return ex;
  }

  bool scratchpad_, coupled_;
  std::pair<int64_t, int64_t> train_, eval_;
  lengen::Vocabulary vocab_;
  int64_t zero_ = 0, one_ = 0, eq_ = 0;
};

void register_parity(lengen::Registrar& r) {
  r.add_task<Parity>();
}

}  // namespace

LENGEN_PLUGIN("parity", "0.1.0", register_parity)
