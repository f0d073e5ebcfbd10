// The command list: `lengen --help` shows them in this order.
#include "cli.h"

namespace lengen::cli {

std::unique_ptr<Command> make_run();
std::unique_ptr<Command> make_config();
std::unique_ptr<Command> make_eval();
std::unique_ptr<Command> make_decode();
std::unique_ptr<Command> make_example();
std::unique_ptr<Command> make_plugins();
std::unique_ptr<Command> make_logits();
std::unique_ptr<Command> make_bench();
std::unique_ptr<Command> make_attention();
std::unique_ptr<Command> make_taotp();
std::unique_ptr<Command> make_sweep();
std::unique_ptr<Command> make_aggregate();
std::unique_ptr<Command> make_compare();
std::unique_ptr<Command> make_report();

std::vector<std::unique_ptr<Command>> all_commands() {
  std::vector<std::unique_ptr<Command>> out;
  for (auto make : {make_run,
                    make_config,
                    make_eval,
                    make_decode,
                    make_example,
                    make_plugins,
                    make_logits,
                    make_bench,
                    make_attention,
                    make_taotp,
                    make_sweep,
                    make_aggregate,
                    make_compare,
                    make_report}) {
    out.push_back(make());
  }
  return out;
}

}  // namespace lengen::cli
