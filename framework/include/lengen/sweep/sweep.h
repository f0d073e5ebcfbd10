#pragma once

// Ablation sweeps: one YAML file names a base experiment and the axes to vary; every point is
// an ordinary run directory (runs/<config name>/<seed> under the sweep's folder), run here by a
// bounded worker pool or on a cluster as one Slurm job array, and aggregated into median /
// IQR / fraction-above-threshold tables and heatmaps over seeds. docs/sweeps.md has the format.

#include "lengen/core/export.h"
#include "lengen/eval/paper.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lengen::sweep {

/// One point: the base experiment with these overrides.
struct Point {
  int64_t index = 0;
  std::string name;         ///< unique, from the varied keys, e.g. "position=coupling,seed=1"
  std::string config_name;  ///< the name without the seed: the seeds of a configuration share it
  int64_t seed = 0;
  std::vector<std::pair<std::string, std::string>> varied;  ///< key -> value (YAML flow text)
  std::vector<std::string> overrides;                       ///< `key=value` for Experiment::load
  std::string run_dir;   ///< <sweep dir>/runs/<config name>/<seed>
  std::string resolved;  ///< the point's resolved experiment (YAML): its config.yaml, and the value
                         ///< of a key it does not vary
};

/// `slurm:` section (every key optional).
struct SlurmOptions {
  std::string partition, time, account, qos, mem;
  int64_t cpus_per_task = 0;  ///< 0: Slurm's default
  int64_t gpus_per_task = 0;
  int64_t array_limit = 0;         ///< `%N` concurrency limit; 0: none
  std::vector<std::string> extra;  ///< lines added verbatim (e.g. "#SBATCH --constraint=a100")
  std::string setup;               ///< shell lines run before the point (module load ...)
};

struct Sweep {
  std::string file;  ///< the sweep YAML
  std::string name;
  std::string base;               ///< base experiment file (absolute)
  std::string dir;                ///< output folder of the sweep (absolute)
  std::vector<std::string> axes;  ///< varied keys, in file order (zip members included)
  /// `labels:`: key -> value (YAML flow text) -> its name in point names
  std::map<std::string, std::map<std::string, std::string>> labels;
  std::vector<Point> points;
  int64_t workers = 1;          ///< local executor: points at a time
  int64_t threads_per_run = 0;  ///< 0: cores / workers
  int64_t points_per_gpu = 1;   ///< local executor with GPUs: points sharing one GPU at a time
  double threshold = 0.9;       ///< aggregate: fraction of seeds at or above this accuracy
  SlurmOptions slurm;
  /// `paper:` (or the base experiment's): the paper's figures, each row resolved to the
  /// configurations it stands beside; aggregate prints and plots lengen's median beside them.
  PaperReference paper;
};

/// Reads a sweep file, expands grid x zip groups (+ explicit points), names the points and
/// validates every point's experiment (unknown key, bad value, unknown plugin) before anything
/// runs. Errors name the sweep file, line and key. `overrides` (--set) apply to every point.
/// A sweep of more than `max_points` points (grid and explicit points together) is refused
/// before it is expanded: planning validates each point (about 3 ms each on a 2-core Zen 4).
inline constexpr uint64_t kMaxSweepPoints = 100000;
/// The keys of a sweep file (validation and docs/config-reference.md).
LENGEN_API ComponentSpec sweep_schema();
/// The sweep file's sections for `lengen plugins --markdown`: its top level and its `paper:`.
LENGEN_API std::vector<ComponentSpec> sweep_sections();
LENGEN_API Sweep load_sweep(const std::string& path,
                            const std::vector<std::string>& overrides = {},
                            uint64_t max_points = kMaxSweepPoints);

/// The points that `--only KEY=VALUE` filters keep (`lengen sweep FILE --only seed=0 --only
/// task.operation=addition`): KEY is an axis; VALUE is YAML, matched as a paper row's `where:`
/// is (as written, or by its component name) or by its name under `labels:`. Values given for one
/// key are alternatives; all keys must hold. Each point keeps its index. Errors name the filter:
/// not KEY=VALUE, a key that is not an axis (listing the axes), a value no point has (listing the
/// axis's values).
LENGEN_API std::vector<Point> select_points(const Sweep& sweep,
                                            const std::vector<std::string>& only);

/// Throws when a point that already ran (checkpoints, stages or results) holds a config.yaml
/// that differs from its experiment in this plan, naming the sweep file, the point and the
/// file (an option added since it ran counts at its default). Writes nothing.
LENGEN_API void check_plan(const Sweep& sweep);

/// Writes <dir>/sweep.json (the points) and every point's resolved config.yaml, atomically,
/// after check_plan has passed for every point (a refused plan writes nothing).
LENGEN_API void write_plan(const Sweep& sweep);

enum class State { kDone, kRunning, kFailed, kInterrupted, kMissing };
LENGEN_API const char* state_name(State s);

/// done: eval/summary.json exists (written last and atomically); failed: the last attempt
/// exited non-zero (sweep-failed.json); running: a live attempt holds sweep-running.json
/// (a local PID that is alive, or a Slurm job that squeue still lists); interrupted: an
/// attempt was stopped on request (sweep-stopped.json: Ctrl-C, SIGTERM before a time limit)
/// or died without a verdict (SIGKILL, node failure); missing: never started.
LENGEN_API State point_state(const Point& point);

/// Runs one point in this process's child: `lengen run <run_dir>/config.yaml --resume`, with
/// stdout/stderr appended to <run_dir>/sweep.log, the running marker while it runs and the
/// failure record when it fails. Returns the exit status. `lengen` is the CLI's path.
LENGEN_API int run_point(const Sweep& sweep,
                         const Point& point,
                         const std::string& lengen,
                         int64_t threads,
                         const std::string& slurm_job = "");

/// Local executor: runs every point that is not done (or running) with `workers` at a time;
/// one child per point, CUDA_VISIBLE_DEVICES assigned round-robin when GPUs are listed.
/// A failure is recorded and the others go on. SIGINT/SIGTERM: no new points start, running
/// ones are asked to stop (they checkpoint) and the call returns. Returns the failures.
LENGEN_API int64_t run_local(const Sweep& sweep,
                             const std::string& lengen,
                             int64_t workers,
                             const std::vector<std::string>& gpus);

/// `lengen sweep FILE` on this machine: holds the sweep folder's lock (`wait`: wait for another
/// holder instead of refusing), writes the plan of `whole` (the whole sweep, even where `s` keeps
/// fewer points, as --only does), runs `s`'s points that are not done with run_local and
/// aggregates the folder (results, summary, heatmaps). Returns the points that failed.
LENGEN_API int64_t run_here(const Sweep& whole,
                            const Sweep& s,
                            const std::string& lengen,
                            int64_t workers,
                            const std::vector<std::string>& gpus,
                            bool wait);

/// Worker slots of the local executor: `jobs` (-j) when given; else the file's
/// executor.workers when it asks for more than one or no GPU is listed; else
/// `gpus` x `points_per_gpu` (small points share a GPU, as researchers run CPU-sized models).
LENGEN_API int64_t local_workers(int64_t jobs,
                                 int64_t file_workers,
                                 int64_t gpus,
                                 int64_t points_per_gpu);

/// The CUDA device of worker slot `slot` (empty without GPUs): round-robin over `gpus`, so
/// the first points spread over the GPUs and `gpus` x k slots put k points on each.
LENGEN_API std::string gpu_for_slot(size_t slot, const std::vector<std::string>& gpus);

/// Seconds until a local sweep ends, from what has finished so far: every point is assumed to
/// take `mean_point_s` (the mean of the finished ones); a running point that has run
/// `running_elapsed_s[i]` has what is left of that mean; points not yet started share the
/// `workers` slots. Never negative.
LENGEN_API double sweep_eta_seconds(double mean_point_s,
                                    const std::vector<double>& running_elapsed_s,
                                    int64_t not_started,
                                    int64_t workers);

/// The sbatch script of a job array over `indices` (points not done), mapping
/// SLURM_ARRAY_TASK_ID to a point through `lengen sweep FILE --point ID`.
LENGEN_API std::string slurm_script(const Sweep& sweep,
                                    const std::vector<int64_t>& indices,
                                    const std::string& lengen);

/// Submits the script with sbatch, records the job ID in <dir>/slurm/jobs.txt, returns it.
LENGEN_API std::string submit_slurm(const Sweep& sweep, const std::string& script_path);

/// scancel every job recorded in <dir>/slurm/jobs.txt. Returns how many were cancelled.
LENGEN_API int64_t cancel_slurm(const Sweep& sweep);

/// Collects every completed point into <dir>/aggregate/results.csv (one row per point and
/// grid cell) and summary.csv (per configuration and cell: seeds, median, q25, q75, IQR,
/// fraction of seeds >= threshold, min, max), reading <sweep_dir>/sweep.json. threshold < 0:
/// the sweep's own. Returns the number of points read. eval_name: aggregate each run's
/// evals/<eval_name>/ (what `lengen eval RUN --out NAME --set ...` writes) instead of its eval/,
/// into <dir>/aggregate/evals/<eval_name>/; points without it are left out with a warning, and
/// none having it is an error. stage_name (exclusive with eval_name): aggregate each run's
/// stages/<stage_name>/eval/ (an eval stage of a multi-stage run, e.g. the model before a
/// fine-tuning stage) into <dir>/aggregate/stages/<stage_name>/, with the same rules.
LENGEN_API int64_t aggregate(const std::string& sweep_dir,
                             double threshold = -1,
                             const std::string& eval_name = "",
                             const std::string& stage_name = "");

/// Whether NAME can name a changed evaluation of a run, RUN/evals/NAME/ (`lengen eval --out`,
/// `lengen aggregate --eval`): non-empty, no '/', neither "." nor "..".
LENGEN_API bool is_eval_name(const std::string& name);

/// Where aggregate() writes: <sweep_dir>/aggregate, aggregate/evals/<eval_name> or
/// aggregate/stages/<stage_name>.
LENGEN_API std::string aggregate_dir(const std::string& sweep_dir,
                                     const std::string& eval_name = "",
                                     const std::string& stage_name = "");

/// Aggregates finished runs that are not one sweep (`lengen compare`): each run directory
/// (holding config.yaml and eval/summary.json) joins the configuration named by its
/// experiment's `name`, with its `seed`; runs of one name are seeds of one configuration and
/// get median/IQR/fraction like a sweep's points. Writes <out_dir>/sweep.json (the manifest)
/// and <out_dir>/aggregate/. Every run must be evaluated on the same grid axes. Runs whose
/// config.yaml has a `paper:` block get the paper's figures beside their median (paper.csv).
LENGEN_API int64_t compare_runs(const std::vector<std::string>& run_dirs,
                                const std::string& out_dir,
                                double threshold = 0.9);

}  // namespace lengen::sweep
