// The seq2seq_arithmetic task's option schema (schema.h).
#include "schema.h"

namespace lengen::tasks {

lengen::ComponentSpec seq2seq_arithmetic_schema() {
  using lengen::OptionSpec;

  return {"task",
          "seq2seq_arithmetic",
          "Duan & Shi 2023's encoder-decoder formats: successor, addition, N x 1 and parity, "
          "operands zero-padded to a fixed width, output reversed; interleaved inputs (A.4)",
          {OptionSpec::string("operation", "successor | addition | nx1 | parity")
               .with_default("addition")
               .one_of({"successor", "addition", "nx1", "parity"}),
           OptionSpec::integer("width",
                               "W: operands are zero-padded to W digits (bits) and the "
                               "output to W, in training and test alike; 0 = the largest "
                               "evaluation length + 1 (parity: + 0)")
               .with_default(int64_t{0})
               .at_least(0)
               .at_most(4096),
           OptionSpec::boolean("interleave",
                               "the aligned input of A.4: `+ a_W b_W ... a_1 b_1`, "
                               "`* a_W b ... a_1 b` (the paper's ABS experiments; no "
                               "effect on successor and parity)")
               .with_default(false),
           OptionSpec::boolean("markers",
                               "wrap the source in SOS and EOS, `$ input &`, as the authors' "
                               "released code does (IDs W + 1 and 0: the windows of the first "
                               "and the last output rows reach them)")
               .with_default(false),
           OptionSpec::integer("train_max",
                               "training numbers come from a permutation of [0, "
                               "train_max] (the paper: 2^20)")
               .with_default(int64_t{1} << 20)
               .at_least(1)
               .at_most(int64_t{1} << 26),
           OptionSpec::number("train_fraction",
                              "the training part of the permutation (7:1 = 0.875); "
                              "the rest is the validation split")
               .with_default(0.875)
               .at_least(0.0)
               .at_most(1.0),
           OptionSpec::integer("split_seed", "seed of the permutation")
               .with_default(int64_t{0})
               .at_least(0),
           OptionSpec::string("train_lengths",
                              "numbers: each operand uniform over the training numbers (the "
                              "paper: 86% of [0, 2^20] has 6 digits) | digits: its length "
                              "(digits, bits) uniform first, then a training number of that "
                              "length")
               .with_default("numbers")
               .one_of({"numbers", "digits"}),
           OptionSpec::int_list("eval_digits", "[lo, hi]: default range of the 'digits' grid axis")
               .with_default(std::vector<int64_t>{1, 50})
               .at_least(1)}};
}

}  // namespace lengen::tasks
