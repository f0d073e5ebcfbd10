// `lengen sweep`: run every point of a sweep here or on Slurm; --status, --cancel, --point.
#include "lengen/sweep/sweep.h"

#include "../cli.h"

#include "lengen/core/file.h"
#include "lengen/core/lock.h"
#include "lengen/core/log.h"
#include "lengen/core/run_dir.h"
#include "lengen/report/report.h"

#include <torch/cuda.h>

#include <filesystem>
#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace lengen::cli {

namespace {

// `--status` (and a local dry run): each point's state, then the count of each state.
// `states` are s.points' states in order; `total` the whole sweep's points.
void print_status(const sweep::Sweep& s,
                  size_t total,
                  bool only,
                  const std::vector<sweep::State>& states) {
  std::map<sweep::State, int64_t> counts;
  for (auto st : states)
    ++counts[st];
  fmt::print("{} ({} points{}, folder {})\n",
             s.name,
             total,
             only ? fmt::format(", {} kept by --only", s.points.size()) : "",
             s.dir);
  for (size_t i = 0; i < s.points.size(); ++i) {
    fmt::print(
        "  {:>4}  {:<12} {}\n", s.points[i].index, sweep::state_name(states[i]), s.points[i].name);
  }
  std::vector<std::string> parts;
  for (auto st : {sweep::State::kDone,
                  sweep::State::kRunning,
                  sweep::State::kFailed,
                  sweep::State::kInterrupted,
                  sweep::State::kMissing}) {
    parts.push_back(fmt::format("{} {}", counts[st], sweep::state_name(st)));
  }
  fmt::print("{}\n", join(parts, ", "));
}

int run_sweep(const std::string& file,
              const std::string& executor,
              int64_t jobs,
              const std::string& gpus_text,
              int64_t points_per_gpu,
              bool dry,
              bool status,
              bool cancel,
              int64_t point,
              const std::string& job,
              const std::vector<std::string>& only,
              const std::vector<std::string>& sets,
              bool wait) {
  auto log = logger("sweep");
  sweep::Sweep s = sweep::load_sweep(file, sets);
  // --only: the plan (sweep.json, every config.yaml) stays the whole sweep's; the rest of this
  // command (status, running, submitting) sees only the points kept.
  const sweep::Sweep whole = s;
  if (!only.empty())
    s.points = sweep::select_points(s, only);
  if (points_per_gpu > 0)
    s.points_per_gpu = points_per_gpu;
  if (cancel) {
    fmt::print("cancelled {} Slurm job(s) of {}\n", sweep::cancel_slurm(s), s.name);
    return 0;
  }
  if (point >= 0) {
    LENGEN_CHECK(point < static_cast<int64_t>(s.points.size()),
                 "{}: there is no point {} (the sweep has {})",
                 file,
                 point,
                 s.points.size());
    const auto& p = s.points[static_cast<size_t>(point)];
    if (!fs::exists(RunDir(p.run_dir).config()))
      sweep::write_plan(whole);
    if (sweep::point_state(p) == sweep::State::kDone) {
      log->info("point {} ({}) is already done", point, p.name);
      return 0;
    }
    log->info("point {} ({}) -> {}", point, p.name, p.run_dir);
    return sweep::run_point(s, p, self_exe(), s.threads_per_run, job);
  }
  // One state query per point (a running Slurm point costs a squeue call).
  std::vector<sweep::State> states;
  std::vector<int64_t> todo;
  for (const auto& p : s.points) {
    auto st = sweep::point_state(p);
    states.push_back(st);  // in the order of s.points
    if (st != sweep::State::kDone && st != sweep::State::kRunning)
      todo.push_back(p.index);
  }
  // A dry run refuses what the run would: a point that ran under another config. (A Slurm dry
  // run writes the plan and its script below, and write_plan makes the same check.)
  if (dry && executor == "local")
    sweep::check_plan(whole);
  if (status || (dry && executor == "local")) {
    print_status(s, whole.points.size(), !only.empty(), states);
    return 0;
  }
  if (executor == "slurm") {
    // One `lengen sweep` writes the folder at a time (the plan, the script).
    const FolderLock lock(s.dir, "", wait, "`lengen sweep ... --wait`");
    lock.remove_torn_files();
    sweep::write_plan(whole);
    const fs::path dir = fs::path(s.dir) / "slurm";
    fs::create_directories(dir);
    const std::string script = sweep::slurm_script(s, todo, self_exe());
    const std::string path = (dir / "sweep.sbatch").string();
    write_file_atomic(path, script);
    if (dry) {
      fmt::print("{}", script);
      log->info("dry run: {} written, nothing submitted", path);
      return 0;
    }
    const std::string id = sweep::submit_slurm(s, path);
    fmt::print("submitted job array {} ({} points) from {}\n", id, todo.size(), path);
    return 0;
  }
  std::vector<std::string> gpus;
  std::stringstream gs(gpus_text);
  for (std::string g; std::getline(gs, g, ',');) {
    if (!g.empty())
      gpus.push_back(g);
  }
  if (gpus.empty() && torch::cuda::is_available()) {
    for (int64_t g = 0; g < static_cast<int64_t>(torch::cuda::device_count()); ++g)
      gpus.push_back(std::to_string(g));
  }
  const int64_t workers =
      sweep::local_workers(jobs, s.workers, static_cast<int64_t>(gpus.size()), s.points_per_gpu);
  const int64_t failures = sweep::run_here(whole, s, self_exe(), workers, gpus, wait);
  if (failures > 0) {
    log->error(
        "{} point(s) failed; `lengen sweep {} --status` lists them, running the sweep again "
        "retries them",
        failures,
        file);
    return 1;
  }
  return 0;
}

class Sweep : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* sw = app.add_subcommand(
        "sweep", "run every point of a sweep here or on Slurm; --status, --cancel");
    sw->add_option("sweep", file_, "sweep YAML file")->required();
    sw->add_option("--executor", executor_, "local (default) or slurm")
        ->check(CLI::IsMember({"local", "slurm"}));
    sw->add_option("-j,--jobs", jobs_, "local: points at a time (default: executor.workers)");
    sw->add_option("--gpus",
                   gpus_,
                   "local: comma-separated CUDA devices, assigned to worker slots round-robin");
    sw->add_option("--points-per-gpu",
                   points_per_gpu_,
                   "local: points sharing one GPU at a time (default: executor.points_per_gpu, 1)")
        ->check(CLI::PositiveNumber);
    sw->add_flag("--dry-run",
                 dry_,
                 "list the points (local) or print the batch script (slurm); run nothing");
    sw->add_flag(
        "--status", status_, "which points are done, running, failed, interrupted or missing");
    sw->add_flag("--cancel", cancel_, "scancel the sweep's Slurm jobs");
    sw->add_flag("--wait",
                 wait_,
                 "when another `lengen sweep` holds the folder, wait for it instead of refusing");
    sw->add_option("--only",
                   only_,
                   "run (or list) only the points with this value of an axis: --only seed=0 --only "
                   "task.operation=addition (repeatable; one key's values are alternatives, all "
                   "keys must hold)")
        ->allow_extra_args(false);
    sw->add_option("--point", point_, "run one point by index (what each Slurm array task calls)")
        ->group("");
    sw->add_option("--job", job_, "Slurm job ID of this task")->group("");
    add_common(sw, common);
    return sw;
  }

  int run(const Common& common) override {
    return run_sweep(file_,
                     executor_,
                     jobs_,
                     gpus_,
                     points_per_gpu_,
                     dry_,
                     status_,
                     cancel_,
                     point_,
                     job_,
                     only_,
                     common.sets,
                     wait_);
  }

 private:
  std::string file_, executor_ = "local", job_, gpus_;
  std::vector<std::string> only_;
  int64_t jobs_ = 0, point_ = -1, points_per_gpu_ = 0;
  bool dry_ = false, status_ = false, cancel_ = false, wait_ = false;
};

}  // namespace

std::unique_ptr<Command> make_sweep() {
  return std::make_unique<Sweep>();
}
}  // namespace lengen::cli
