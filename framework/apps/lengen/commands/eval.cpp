// `lengen eval`: evaluate a trained run on its grid (or one changed with --set).
#include "../cli.h"

#include "lengen/report/report.h"

namespace lengen::cli {
namespace {

class Eval : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* c = app.add_subcommand("eval", "evaluate a trained run on its grid (or a changed one)");
    c->add_option("run", run_, "run directory (runs/<name>/<seed>)")->required();
    c->add_flag("--decode", decode_, "use true KV-cached greedy decoding");
    add_common(c, common);
    return c;
  }
  int run(const Common& common) override {
    LoadedRun r = load_run(run_, common.sets);
    if (decode_) r.exp.eval.greedy_decode = true;
    evaluate_and_report(r.model, r.exp, r.exp.eval, r.device, r.dir, r.exp.train.steps);
    return 0;
  }

 private:
  std::string run_;
  bool decode_ = false;
};

}  // namespace
std::unique_ptr<Command> make_eval() { return std::make_unique<Eval>(); }
}  // namespace lengen::cli
