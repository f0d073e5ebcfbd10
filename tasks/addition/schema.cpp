// The addition task's option schema (schema.h).
#include "schema.h"

namespace lengen::tasks {

lengen::ComponentSpec addition_schema() {
  using lengen::OptionSpec;

  return {
      "task",
      "addition",
      "m-operand integer addition `a+b=s` with zero padding, reversed answer and coupled IDs",
      {OptionSpec::integer("operands", "number of operands m").with_default(2).at_least(2),
       OptionSpec::int_list("train_digits", "[lo, hi]: operand lengths seen in training")
           .with_default(std::vector<int64_t>{1, 10})
           .at_least(1),
       OptionSpec::boolean("same_length", "training operands share one length (else independent)")
           .with_default(false),
       OptionSpec::int_list("eval_digits", "[lo, hi]: default range of the 'digits' grid axis")
           .with_default(std::vector<int64_t>{1, 30})
           .at_least(1),
       OptionSpec::boolean("zero_pad", "left-pad numbers with zeros").with_default(true),
       OptionSpec::string("pad_to",
                          "operand: operands to the longest operand, answer to its maximal "
                          "length; answer: every number to the answer's maximal length")
           .with_default("operand")
           .one_of({"operand", "answer"}),
       OptionSpec::boolean("reverse_output",
                           "write the answer (every partial sum of the scratchpad) "
                           "least significant digit first")
           .with_default(true),
       OptionSpec::boolean("reverse_query",
                           "write every operand least significant digit first "
                           "(Cho et al. 2025, Figure 14's reversed query; queries "
                           "given to lengen decode are read the same way)")
           .with_default(false),
       OptionSpec::string("position_ids",
                          "coupled: equal significance, equal ID (start 1: "
                          "the least significant digit 2, `+` and `=` 1); "
                          "abacus: a digit's significance within its own number "
                          "(1 = least significant), every other token 0 "
                          "(McLeish et al. 2024's Abacus indices, with the "
                          "abacus scheme); sequential: 0, 1, 2, ...")
           .with_default("coupled")
           .one_of({"coupled", "abacus", "sequential"}),
       OptionSpec::int_list("train_operands",
                            "[lo, hi]: operand counts in training (default: operands)")
           .with_default(std::vector<int64_t>{2, 2})
           .at_least(2),
       OptionSpec::int_list("eval_operands",
                            "[lo, hi]: range of the 'operands' grid axis, an axis when lo < hi "
                            "(default: operands)")
           .with_default(std::vector<int64_t>{2, 2})
           .at_least(2),
       OptionSpec::boolean("mixed_lengths",
                           "S_A(n, m): half the training samples give every operand one length, "
                           "half draw each length independently (overrides same_length)")
           .with_default(false),
       OptionSpec::boolean("scratchpad",
                           "write the cumulative sums 0 > a1 > a1+a2 > ..., with bi-level coupled "
                           "IDs; with zero_pad every number is padded to the answer's length "
                           "(pad_to: answer)")
           .with_default(false),
       OptionSpec::integer("index_hints",
                           "N > 0: a hint token before every digit of the operands and the answer, "
                           "hint o + k - 1 marking significance k, o uniform per example over the "
                           "offsets where the answer fits N hints (Zhou et al. 2024); 0: none")
           .with_default(int64_t{0})
           .at_least(0)}};
}

}  // namespace lengen::tasks
