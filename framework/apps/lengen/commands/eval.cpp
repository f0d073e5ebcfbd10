// `lengen eval`: evaluate a trained run on its grid, or on a changed evaluation (--set,
// --decode) whose results go beside the run's own, never over them.
#include "../cli.h"

#include "lengen/core/error.h"
#include "lengen/core/file.h"
#include "lengen/core/log.h"
#include "lengen/core/run_dir.h"
#include "lengen/report/report.h"
#include "lengen/sweep/sweep.h"

#include <cctype>
#include <filesystem>

namespace fs = std::filesystem;

namespace lengen::cli {
namespace {

/// A folder name for a changed evaluation: its overrides as written ("task.width=54"), joined
/// with '+', characters other than [A-Za-z0-9._=,-] as '_', and "decode" for --decode.
std::string variant_name(const std::vector<std::string>& sets, bool decode) {
  std::string name;
  for (const auto& s : sets) {
    if (!name.empty())
      name += '+';
    for (char ch : s) {
      const bool keep = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' ||
                        ch == '=' || ch == ',' || ch == '-';
      name += keep ? ch : '_';
    }
  }
  if (decode)
    name += name.empty() ? "decode" : "+decode";
  if (name.size() > 120)
    name = name.substr(0, 120);
  return name;
}

class Eval : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* c = app.add_subcommand("eval", "evaluate a trained run on its grid (or a changed one)");
    c->add_option("run", run_, "run directory (runs/<name>/<seed>)")->required();
    c->add_flag("--decode", decode_, "use true KV-cached greedy decoding");
    c->add_option(
        "--out",
        out_,
        "write a changed evaluation to RUN/evals/NAME (default: a name made of the --set "
        "overrides and --decode); the run's own eval/ is rewritten only when nothing is changed");
    add_common(c, common);
    return c;
  }

  int run(const Common& common) override {
    LoadedRun r = load_run(run_, common.sets);
    if (decode_)
      r.exp.eval.greedy_decode = true;
    std::string dir = r.dir;
    if (!common.sets.empty() || decode_ || !out_.empty()) {
      const std::string name = out_.empty() ? variant_name(common.sets, decode_) : out_;
      LENGEN_CHECK(sweep::is_eval_name(name),
                   "--out {}: expected a folder name (no '/'), as in {}",
                   out_,
                   RunDir(r.dir).named_eval("NAME").str());
      const RunDir variant = RunDir(r.dir).named_eval(name);
      dir = variant.str();
      fs::create_directories(dir);
      write_file_atomic(variant.config().string(), r.exp.resolved_yaml());
      logger()->info(
          "a changed evaluation: results go to {} ({}/eval is left as it is)", dir, r.dir);
    }
    evaluate_and_report(r.model, r.exp, r.exp.eval, r.device, dir, r.exp.train.steps);
    return 0;
  }

 private:
  std::string run_;
  std::string out_;
  bool decode_ = false;
};

}  // namespace

std::unique_ptr<Command> make_eval() {
  return std::make_unique<Eval>();
}
}  // namespace lengen::cli
