// `lengen config`: an experiment's resolved configuration, printed without running it: the
// `extends:` chain merged, `--set` applied, every default filled in, each plugin's file named.
// What `lengen run` would write to <run>/config.yaml, to check a file (or an edit of its base)
// before spending compute on it.
#include "../cli.h"

#include <fmt/format.h>

namespace lengen::cli {
namespace {

class Config : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* c = app.add_subcommand("config",
                                 "print an experiment's resolved configuration (extends merged, "
                                 "--set applied, defaults filled in) without running it");
    c->add_option("experiment", file_, "experiment YAML file")->required();
    add_common(c, common);
    return c;
  }

  int run(const Common& common) override {
    fmt::print("{}", Experiment::load(file_, common.sets).resolved_yaml());
    return 0;
  }

 private:
  std::string file_;
};

}  // namespace

std::unique_ptr<Command> make_config() {
  return std::make_unique<Config>();
}
}  // namespace lengen::cli
