// The padded_arithmetic task's option schema (schema.h).
#include "schema.h"

namespace lengen::tasks {

lengen::ComponentSpec padded_arithmetic_schema() {
  using lengen::OptionSpec;

  return {"task",
          "padded_arithmetic",
          "Jelassi et al. 2023's encoding: operands most significant digit first, right-padded "
          "with <PAD> to a fixed width, the answer on the first n_out positions (encoder)",
          {OptionSpec::string("operation",
                              "add (+), mod_add (%), mul (x, N x k), mod_mul (*), "
                              "elementwise_add (+, digit-wise without carries)")
               .with_default("add")
               .one_of({"add", "mod_add", "mul", "mod_mul", "elementwise_add"}),
           OptionSpec::integer("modulus",
                               "c of the modular operations (the paper: 100, 101, 128, 1000)")
               .with_default(int64_t{100})
               .at_least(2)
               .at_most(1e9),
           OptionSpec::integer("width",
                               "n_test: every operand is padded to this many digits, "
                               "training and test alike; 0 = 20 (35 for mul)")
               .with_default(int64_t{0})
               .at_least(0),
           OptionSpec::int_list("train_digits",
                                "n_train: operands uniform below 10^n, n one value "
                                "or uniform in [lo, hi] (primers: [6, 35])")
               .with_default(std::vector<int64_t>{5})
               .at_least(1),
           OptionSpec::integer("second_digits",
                               "k: the second operand is uniform below 10^k in "
                               "training and test (N x k); 0 = as the first (the "
                               "default except mul, whose default is 3)")
               .with_default(int64_t{-1})
               .at_least(-1),
           OptionSpec::integer("train_set_size",
                               "N_train: first operands come from a fixed set of "
                               "this many values; 0 = fresh every time")
               .with_default(int64_t{5000})
               .at_least(0),
           OptionSpec::integer("train_set_seed", "seed of the fixed first-operand set")
               .with_default(int64_t{0})
               .at_least(0),
           OptionSpec::boolean("paired_lengths",
                               "with a train_digits range: a training pair draws one n and "
                               "takes its first operand among the fixed set's values drawn "
                               "below 10^n, so both operands share n (fresh first operands "
                               "always do); false: each set value keeps the n it was drawn with")
               .with_default(false),
           OptionSpec::int_list("eval_digits",
                                "[lo, hi]: default range of the 'digits' grid axis; "
                                "[0, 0] = [1, width]")
               .with_default(std::vector<int64_t>{0, 0})
               .at_least(0),
           OptionSpec::boolean("exact_digits",
                               "operands have exactly n digits (no leading zero) "
                               "instead of being uniform below 10^n, in training "
                               "and test (e.g. primers of exactly 35 digits)")
               .with_default(false),
           OptionSpec::boolean("reverse",
                               "every number (operands and answer) least significant digit first, "
                               "still right-padded, so the operands are aligned by significance "
                               "(not the paper's encoding; queries are still written most "
                               "significant digit first)")
               .with_default(false)}};
}

}  // namespace lengen::tasks
