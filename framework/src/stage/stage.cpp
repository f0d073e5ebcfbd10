#include "lengen/stage/stage.h"

#include "builtin.h"

#include "lengen/core/error.h"
#include "lengen/core/fault.h"
#include "lengen/core/file.h"
#include "lengen/core/lock.h"
#include "lengen/core/log.h"
#include "lengen/experiment/experiment.h"
#include "lengen/report/paper.h"
#include "lengen/report/report.h"
#include "lengen/stage/run.h"
#include "lengen/train/checkpoint.h"
#include "lengen/train/tensorboard.h"
#include "lengen/train/weights.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <filesystem>

namespace fs = std::filesystem;

namespace lengen {

// ---------------------------------------------------------------------------------------
// The built-in stage kinds (one file each in this folder) join the experiment layer's registry
// when the library loads, before anything can read a file; their expansions with them.

namespace {

const bool builtin_stage_kinds_registered = [] {
  StageRegistry& r = stage_registry();
  register_train_stage(r);
  register_eval_stage(r);
  register_self_label_stage(r);
  register_self_improve_stage(r);
  register_compare_stages_stage(r);
  return true;
}();

}  // namespace

namespace {

// Copies a folder's files to another atomically, file by file (summary.json last: the
// sweep reads it as "done").
void copy_results(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (!fs::is_directory(from, ec))
    return;
  fs::create_directories(to);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(from, ec)) {
    if (e.is_regular_file())
      files.push_back(e.path());
  }
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    return (a.filename() == "summary.json") < (b.filename() == "summary.json") ||
           ((a.filename() == "summary.json") == (b.filename() == "summary.json") && a < b);
  });
  for (const auto& f : files) {
    const fs::path tmp = to / (f.filename().string() + ".tmp");
    std::error_code ec;
    fs::copy_file(f, tmp, fs::copy_options::overwrite_existing, ec);
    if (!ec)
      fs::rename(tmp, to / f.filename(), ec);
    if (ec) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw Error(fmt::format(
          "{}: cannot copy {} here: {}", (to / f.filename()).string(), f.string(), ec.message()));
    }
    fault::reached("copied:", f.filename().string());
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Running an experiment

void run_experiment(const Experiment& exp, const RunOptions& options) {
  auto log = logger("stage");
  const std::string dir = exp.run_dir();
  const RunDir run(dir);
  // One writer per run directory, before anything in it is removed or written.
  const FolderLock lock(dir, "", options.wait, "`lengen run ... --wait`");
  lock.remove_torn_files();
  if (options.fresh) {
    for (const fs::path& output : run.outputs()) {
      fs::remove_all(output);
    }
  }
  fs::create_directories(dir);
  write_file_atomic(run.config().string(), exp.resolved_yaml());

  const bool implicit = exp.stages.empty();
  std::vector<StageSpec> implicit_stages;
  if (implicit) {
    auto self = std::shared_ptr<const Experiment>(&exp, [](const Experiment*) {});
    StageSpec train;
    train.name = "train";
    train.kind = "train";
    train.trains = true;
    train.experiment = self;
    StageSpec eval;
    eval.name = "eval";
    eval.kind = "eval";
    eval.evaluates = true;
    eval.init_from = "train";
    eval.init_from_stage = true;
    eval.experiment = self;
    for (StageSpec* st : {&train, &eval})
      st->stage =
          stage_registry().lookup(st->kind, exp.root).make(st->options, StageInfo{st->name});
    implicit_stages = {train, eval};
  }
  const std::vector<StageSpec>& stages = implicit ? implicit_stages : exp.stages;
  if (!implicit && !options.resume) {
    for (const auto& st : stages) {
      const fs::path marker = run.stage(st.name).stage_marker();
      LENGEN_CHECK(!fs::exists(marker),
                   "{} already holds finished stages ({}); pass --resume to continue that run "
                   "or --fresh to discard it",
                   dir,
                   marker.string());
    }
  }
  std::string last_eval;
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageSpec& st = stages[i];
    if (options.no_eval && (st.evaluates || st.reads_evaluations))
      continue;
    const RunDir sdir = implicit ? run : run.stage(st.name);
    if (st.evaluates)
      last_eval = sdir.str();
    if (!implicit && fs::exists(sdir.stage_marker())) {
      log->info("stage {}/{} '{}' ({}) finished earlier; skipped",
                i + 1,
                stages.size(),
                st.name,
                st.kind);
      continue;
    }
    if (!implicit) {
      log->info("stage {}/{} '{}' ({}){}",
                i + 1,
                stages.size(),
                st.name,
                st.kind,
                st.init_from.empty() ? "" : fmt::format(", from {}", st.init_from));
    }
    StageContext ctx(stages, i, dir, options.resume, implicit);
    fault::reached("stage.start:", st.name);
    st.stage->run(ctx);
    if (!implicit) {
      nlohmann::json done{{"name", st.name},
                          {"kind", st.kind},
                          {"finished", static_cast<int64_t>(std::time(nullptr))}};
      write_file_atomic(sdir.stage_marker().string(), done.dump() + "\n");
    }
    fault::reached("stage.done:", st.name);
  }
  if (!implicit && !last_eval.empty()) {
    copy_results(RunDir(last_eval).plots(), run.plots());
    copy_results(RunDir(last_eval).eval(), run.eval());
    log->info("the last evaluation ({}) is also in {}", last_eval, run.eval().string());
  }
  const fs::path summary = run.summary();
  if (!exp.paper.empty() && !options.no_eval && fs::exists(summary)) {
    std::vector<std::string> axes, cells;
    const ConfigFigures ours = figures_of_run(summary.string(), exp.name, axes, cells);
    report_paper(exp.paper,
                 compare_with_paper(exp.paper, {ours}, cells),
                 axes,
                 run.eval().string(),
                 run.plot("paper.png").string());
  }
}

std::string final_checkpoint(const std::string& run_dir) {
  const RunDir run(run_dir);
  const fs::path cfg = run.config();
  std::string ckpt;
  if (fs::exists(cfg)) {
    YAML::Node root;
    try {
      root = YAML::LoadFile(cfg.string());
    } catch (const YAML::Exception& e) {
      throw Error(fmt::format("{}: {}", cfg.string(), e.what()));
    }
    if (root["stages"] && root["stages"].IsSequence()) {
      for (size_t i = root["stages"].size(); i-- > 0 && ckpt.empty();) {
        const YAML::Node name = root["stages"][i]["name"];
        if (name)
          ckpt = run.stage(name.as<std::string>()).newest_checkpoint();
      }
    }
  }
  if (ckpt.empty())
    ckpt = run.newest_checkpoint();
  LENGEN_CHECK(
      !ckpt.empty(), "{}: no checkpoint found (train it first with `lengen run`)", run_dir);
  return ckpt;
}

Experiment final_experiment(const Experiment& exp) {
  if (exp.stages.empty())
    return exp;
  const StageSpec* trained = nullptr;
  const StageSpec* evaluated = nullptr;
  for (const auto& st : exp.stages) {
    if (st.trains)
      trained = &st;
    if (st.evaluates)
      evaluated = &st;
  }
  Experiment out = trained ? *trained->experiment : exp;
  if (evaluated)
    out.eval = evaluated->experiment->eval;
  out.stages.clear();
  return out;
}

}  // namespace lengen
