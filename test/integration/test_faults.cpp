// Kills at any moment and full disks, with real processes. LENGEN_FAULT (lengen/core/fault.h)
// stops a `lengen run` or `lengen sweep` dead at a named moment: inside training, halfway
// through a checkpoint's write, inside an evaluation, between stages, inside a self-improvement
// round, inside a sweep's aggregate. Each killed run is resumed and must end with the same
// bytes as an uninterrupted run: every checkpoint kept, the labels, the evaluation's grid and
// examples, the accuracy curve, and metrics.jsonl's steps. A full disk (a small tmpfs, filled
// at a moment by the test while the process is stopped there) must give a clean error naming
// the file, lose nothing written before, and `--resume` must finish the run once there is
// space again.
#include "helpers.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sys/mount.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace lengen;
namespace fs = std::filesystem;
using Catch::Contains;

namespace {

// Four stages: training (with checkpoints, evaluation during training and TensorBoard records),
// a self-labelling round, training on its labels, and a final evaluation that keeps examples.
const char* kStages = R"(name: faults
seed: 4
task: {name: addition, train_digits: [1, 2], eval_digits: [1, 3]}
model: {layers: 1, heads: 2, d_model: 32, d_ff: 64}
position: [{name: coupling, max_position: 16}]
train:
  steps: 20
  batch_size: 16
  optimizer: {name: adam, lr: 0.003}
  log_every: 5
  checkpoint_every: 5
  keep_checkpoints: 10
  eval_every: 10
eval: {samples: 10, examples: 2}
stages:
  - {name: base}
  - {name: label1, kind: self_label, lengths: [3, 3], samples: 24, batch_size: 8, filters: []}
  - name: round1
    init_from: base
    task:
      mixture:
        - {source: standard, dataset_size: 100}
        - {source: r1, from_stage: label1}
    train: {steps: 10}
  - {name: final, kind: eval, init_from: round1}
)";

const char* kRunDir = "faults/4";

// `lengen ARGS` with LENGEN_FAULT set; true when the process died by the fault's SIGKILL.
bool killed_at(const std::string& fault, const std::string& args, std::string* out) {
  const int rc =
      test::run_command(fmt::format("LENGEN_FAULT='{}' {} {}", fault, LENGEN_CLI, args), out);
  // The shell reports a child killed by SIGKILL as 137; a shell that exec'd it, as a signal (-1).
  return (rc == 137 || rc == -1) && out->find("LENGEN_FAULT: kill at") != std::string::npos;
}

// The files of a run that must come out byte for byte the same however often it was killed.
std::vector<std::string> compared_files(const fs::path& run) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(run)) {
    if (!e.is_regular_file())
      continue;
    const fs::path rel = fs::relative(e.path(), run);
    const std::string name = rel.filename().string();
    if (rel.extension() == ".safetensors" || name == "labels.jsonl" || name == "grid.csv" ||
        name == "examples.jsonl" || name == "eval_curve.jsonl") {
      files.push_back(rel.string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// metrics.jsonl's steps, in order (the other fields hold times).
std::vector<int64_t> logged_steps(const fs::path& metrics) {
  std::vector<int64_t> steps;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);)
    steps.push_back(nlohmann::json::parse(line)["step"].get<int64_t>());
  return steps;
}

void require_same_run(const fs::path& want, const fs::path& got) {
  const auto files = compared_files(want);
  REQUIRE(files.size() >= 10);
  CHECK(compared_files(got) == files);
  for (const auto& f : files) {
    INFO(f);
    CHECK(test::read_text((got / f).string()) == test::read_text((want / f).string()));
  }
  // Nothing torn is left: the resumed run removed the temporaries of the killed writes.
  for (const auto& e : fs::recursive_directory_iterator(got)) {
    INFO(e.path().string());
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
  }
  for (const char* stage : {"base", "round1"}) {
    INFO(stage);
    const fs::path m = fs::path("stages") / stage / "metrics.jsonl";
    CHECK(logged_steps(got / m) == logged_steps(want / m));
  }
}

}  // namespace

TEST_CASE("faults: a run killed at any of 24 moments resumes to the bytes of an uninterrupted run",
          "[faults][resume]") {
  test::TempDir tmp;
  test::write_text(tmp.file("f.yaml"), kStages);
  const fs::path ref = fs::path(tmp.str()) / "ref";
  test::sh(
      fmt::format("run {} --set output_dir={} --set threads=1", tmp.file("f.yaml"), ref.string()));
  const fs::path want = ref / kRunDir;

  // Moments, counted from the start of the process (LENGEN_FAULT=trace lists them): steps 1-20
  // are 'base', 21-30 'round1'; checkpoints are written every 5 steps (step-* writes 1-4 in
  // 'base', 5-6 in 'round1'); the evaluations during training are 3 cells each, at steps 0, 10
  // and 20 of 'base' (cells 1-9) and 0 and 10 of 'round1' (10-15); the final evaluation's
  // cells are 16-18; summary.json is written by 'label1' (#1), then by 'final' (#2), then
  // copied to the run's eval/.
  const std::vector<std::string> moments = {
      "train.step#3",            // training, before the first checkpoint
      "train.step#5",            // a step whose checkpoint is not yet written
      "write:step-#1",           // a checkpoint written but not renamed into place
      "written:step-#2",         // just after a checkpoint
      "eval.cell#2",             // the evaluation at step 0
      "eval.cell#6",             // the evaluation at step 10
      "train.step#17",           // training after an evaluation
      "write:step-#4",           // the last checkpoint of 'base', mid-write
      "stage.done:base#1",       // between stages
      "stage.start:label1#1",    // a stage started, nothing written
      "label.batch#1",           // inside the self-labelling round
      "label.batch#3",           // its last batch, labels not yet written
      "write:labels.jsonl#1",    // the labels mid-write
      "written:labels.jsonl#1",  // the labels written, the round not marked finished
      "write:stage.json#2",      // the round's marker mid-write
      "stage.start:round1#1",    // the next stage started
      "train.step#24",           // training on the labels
      "write:step-#6",           // its last checkpoint, mid-write
      "stage.done:round1#1",     // before the final evaluation
      "eval.cell#17",            // inside the final evaluation
      "write:grid.csv#1",        // its grid mid-write
      "written:summary.json#2",  // the final evaluation written, not yet copied to eval/
      "copied:grid.csv#1",       // halfway through copying it to the run's eval/
      "stage.done:final#1",      // everything written but the copy
  };
  REQUIRE(moments.size() >= 20);
  int survived = 0;
  for (size_t i = 0; i < moments.size(); ++i) {
    const std::string& moment = moments[i];
    INFO("killed at " << moment);
    const fs::path out = fs::path(tmp.str()) / fmt::format("k{}", i);
    const std::string args =
        fmt::format("run {} --set output_dir={} --set threads=1", tmp.file("f.yaml"), out.string());
    std::string log;
    REQUIRE(killed_at("kill@" + moment, args, &log));
    CHECK_FALSE(fs::exists(out / kRunDir / "eval" / "summary.json"));
    // Resumed without the fault: it finishes from wherever the kill left it.
    test::sh(args + " --resume");
    require_same_run(want, out / kRunDir);
    ++survived;
    fs::remove_all(out);
  }
  CHECK(survived == static_cast<int>(moments.size()));
}

namespace {

// A local sweep of three seeds, one point at a time.
// The sweep file is tmp/NAME.yaml; its folder is `out`/sw (default: tmp/NAME/sw).
void write_sweep(const test::TempDir& tmp, const std::string& name, std::string out = "") {
  if (out.empty())
    out = tmp.file(name);
  test::write_text(tmp.file("base.yaml"), R"(name: pts
seed: 0
task: {name: addition, train_digits: [1, 2], eval_digits: [1, 3]}
model: {layers: 1, heads: 2, d_model: 16, d_ff: 32}
position: [nope]
train: {steps: 10, batch_size: 8, log_every: 5, checkpoint_every: 5}
eval: {samples: 10}
)");
  test::write_text(tmp.file(name + ".yaml"),
                   fmt::format(R"(name: sw
base: base.yaml
output_dir: {}
grid: {{seed: [0, 1, 2]}}
executor: {{workers: 1, threads_per_run: 1}}
)",
                               out));
}

}  // namespace

TEST_CASE(
    "faults: a local sweep killed at 8 moments completes on its next run, finished points "
    "untouched",
    "[faults][sweep]") {
  test::TempDir tmp;
  write_sweep(tmp, "ref");
  test::sh("sweep " + tmp.file("ref.yaml"));
  const fs::path ref = fs::path(tmp.file("ref")) / "sw";

  // The sweep process at its own moments (the plan, between points, the aggregate), and its
  // points at theirs: LENGEN_FAULT reaches the points' `lengen run` too, so each point dies there
  // and the sweep records it as interrupted.
  const std::vector<std::pair<std::string, bool>> moments = {
      {"write:sweep.json#1", true},        // the plan mid-write
      {"sweep.point_done#1", true},        // after the first point
      {"sweep.point_done#2", true},        // after the second
      {"write:results.csv#1", true},       // the aggregate mid-write
      {"written:summary.csv#1", true},     // the aggregate half written
      {"written:aggregate.json#1", true},  // the aggregate written, its plots not
      {"train.step#7", false},             // every point in training
      {"write:step-#2", false},            // every point's last checkpoint mid-write
  };
  for (size_t i = 0; i < moments.size(); ++i) {
    const auto& [moment, sweep_dies] = moments[i];
    INFO("killed at " << moment);
    const std::string name = fmt::format("k{}", i);
    write_sweep(tmp, name);
    const fs::path got = fs::path(tmp.file(name)) / "sw";
    std::string log;
    const bool killed = killed_at("kill@" + moment, "sweep " + tmp.file(name + ".yaml"), &log);
    CHECK(killed == sweep_dies);
    if (!sweep_dies)
      CHECK_THAT(log, Contains("stopped") && Contains("(resumable)"));
    // What had finished before the kill is left as it is by the next run.
    std::map<std::string, fs::file_time_type> finished;
    for (const auto& e : fs::recursive_directory_iterator(got)) {
      if (e.path().filename() == "summary.json" && e.path().parent_path().filename() == "eval") {
        finished[e.path().string()] = fs::last_write_time(e.path());
      }
    }
    log = test::sh("sweep " + tmp.file(name + ".yaml"));
    CHECK_THAT(log, Contains(fmt::format("3 points, {} to run", 3 - finished.size())));
    for (const auto& [file, when] : finished)
      CHECK(fs::last_write_time(file) == when);
    for (const char* f : {"aggregate/results.csv", "aggregate/summary.csv"}) {
      INFO(f);
      CHECK(test::read_text((got / f).string()) == test::read_text((ref / f).string()));
    }
    for (int seed = 0; seed < 3; ++seed) {
      const fs::path ckpt = fs::path("runs") / "sw" / std::to_string(seed) / "checkpoints" /
                            "step-00000010.safetensors";
      INFO(ckpt.string());
      CHECK(test::read_text((got / ckpt).string()) == test::read_text((ref / ckpt).string()));
    }
    CHECK_THAT(test::sh("sweep " + tmp.file(name + ".yaml") + " --status"),
               Contains("3 done, 0 running"));
  }
}

namespace {

// A 16 MB tmpfs at `dir` for this test's lifetime (root only: `ok` is false elsewhere).
struct SmallDisk {
  std::string dir;
  bool ok = false;
  std::string why;

  explicit SmallDisk(const std::string& where) : dir(where) {
    fs::create_directories(dir);
    ok = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=16m") == 0;
    if (!ok)
      why = std::strerror(errno);
  }

  ~SmallDisk() {
    if (ok)
      ::umount2(dir.c_str(), MNT_DETACH);
  }

  // Fills the disk: a ballast file grows until the kernel refuses (ENOSPC).
  void fill() const {
    std::FILE* f = std::fopen((fs::path(dir) / "ballast").c_str(), "wb");
    REQUIRE(f != nullptr);
    const std::string chunk(1 << 16, 'x');
    while (std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size()) {
    }
    std::fclose(f);
  }

  void free_space() const { fs::remove(fs::path(dir) / "ballast"); }
};

// Every file of `dir` (but the lock) by relative path, with its content.
std::map<std::string, std::string> contents(const fs::path& dir) {
  std::map<std::string, std::string> all;
  if (!fs::exists(dir))
    return all;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename() != "lengen.lock" &&
        e.path().filename() != "ballast") {
      all[fs::relative(e.path(), dir).string()] = test::read_text(e.path().string());
    }
  }
  return all;
}

// Starts lengen ARGS with LENGEN_FAULT=stop@MOMENT; once it has stopped there, fills the disk,
// lets it go on, and returns its exit status (-1: killed by a signal), its output in *out; what
// the folder `watched` held when the disk filled goes to *before.
int fill_disk_at(const SmallDisk& disk,
                 const std::string& moment,
                 const std::string& args,
                 const fs::path& watched,
                 const std::string& log,
                 std::string* out,
                 std::map<std::string, std::string>* before) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("LENGEN_FAULT", ("stop@" + moment).c_str(), 1);
    std::freopen(log.c_str(), "w", stdout);
    ::dup2(::fileno(stdout), ::fileno(stderr));
    ::execl("/bin/sh",
            "sh",
            "-c",
            (std::string("exec ") + LENGEN_CLI + " " + args).c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, WUNTRACED) == pid);
  const bool stopped = WIFSTOPPED(status);
  if (stopped) {
    *before = contents(watched);
    disk.fill();
    ::kill(pid, SIGCONT);
    REQUIRE(::waitpid(pid, &status, 0) == pid);
  }
  *out = test::read_text(log);
  INFO(*out);
  REQUIRE(stopped);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Nothing written before the disk filled was lost: each file is still there, unchanged, or
// for an appended log (*.jsonl, TensorBoard's events), grown from what it was.
void nothing_lost(const std::map<std::string, std::string>& before, const fs::path& dir) {
  const auto after = contents(dir);
  for (const auto& [file, text] : before) {
    INFO(file);
    const auto it = after.find(file);
    REQUIRE(it != after.end());
    const bool appended = file.size() > 6 && (file.rfind(".jsonl") == file.size() - 6 ||
                                              file.find("tfevents") != std::string::npos);
    if (appended) {
      CHECK(it->second.compare(0, text.size(), text) == 0);
    } else {
      CHECK(it->second == text);
    }
  }
}

}  // namespace

TEST_CASE(
    "faults: a disk that fills at any of 8 moments gives a clean error naming the file; --resume "
    "then "
    "finishes the run",
    "[faults_disk]") {
  test::TempDir tmp;
  const SmallDisk disk(tmp.file("disk"));
  if (!disk.ok) {
    WARN("skipped: cannot mount a tmpfs (" << disk.why << "); the full-disk test needs root");
    return;
  }
  test::write_text(tmp.file("f.yaml"), kStages);
  const fs::path ref = fs::path(tmp.str()) / "ref";
  test::sh(
      fmt::format("run {} --set output_dir={} --set threads=1", tmp.file("f.yaml"), ref.string()));

  // Where the disk fills (the process stopped there by LENGEN_FAULT); the write that then fails
  // is the next one that needs space: TensorBoard's events and metrics.jsonl, a checkpoint, the
  // accuracy curve, the labels, the evaluation's grid and examples, the copy to eval/.
  const std::vector<std::string> moments = {
      "stage.start:base#1",
      "train.step#4",
      "written:step-#2",
      "eval.cell#7",
      "label.batch#3",
      "stage.done:label1#1",
      "eval.cell#18",
      "stage.done:final#1",
  };
  std::set<std::string> failed_files;
  for (size_t i = 0; i < moments.size(); ++i) {
    const std::string& moment = moments[i];
    INFO("disk filled at " << moment);
    const fs::path out = fs::path(disk.dir) / fmt::format("d{}", i);
    const std::string args =
        fmt::format("run {} --set output_dir={} --set threads=1", tmp.file("f.yaml"), out.string());
    std::string log;
    std::map<std::string, std::string> before;
    const int rc = fill_disk_at(disk, moment, args, out, tmp.file("run.log"), &log, &before);
    INFO(log);
    CHECK(rc == 1);
    // One clean error line that names the file under the run directory and the reason.
    const auto at = log.find("lengen: error: ");
    REQUIRE(at != std::string::npos);
    const std::string error = log.substr(at, log.find('\n', at) - at);
    CHECK_THAT(error, Contains(out.string()) && Contains("No space left on device"));
    CHECK_THAT(log, !Contains("terminate") && !Contains("Segmentation"));
    const auto file_at = error.find(out.string());
    failed_files.insert(
        fs::path(error.substr(file_at, error.find_first_of(" :", file_at) - file_at)).filename());
    nothing_lost(before, out);
    // With space again, --resume finishes it to the bytes of a run that never failed.
    disk.free_space();
    test::sh(args + " --resume");
    require_same_run(ref / kRunDir, out / kRunDir);
    fs::remove_all(out);
  }
  // A sweep whose disk fills after its last point: the aggregate is refused, the points stay
  // done, and the next run only aggregates.
  write_sweep(tmp, "sref");
  test::sh("sweep " + tmp.file("sref.yaml"));
  write_sweep(tmp, "sdisk", disk.dir);
  {
    const fs::path got = fs::path(disk.dir) / "sw";
    std::string log;
    std::map<std::string, std::string> before;
    const int rc = fill_disk_at(disk,
                                "sweep.point_done#3",
                                "sweep " + tmp.file("sdisk.yaml"),
                                got,
                                tmp.file("sweep.log"),
                                &log,
                                &before);
    INFO(log);
    CHECK(rc == 1);
    CHECK_THAT(log,
               Contains("lengen: error: " + (got / "aggregate").string()) &&
                   Contains("No space left on device"));
    failed_files.insert("aggregate");
    nothing_lost(before, got);
    disk.free_space();
    CHECK_THAT(test::sh("sweep " + tmp.file("sdisk.yaml")), Contains("3 points, 0 to run"));
    for (const char* f : {"aggregate/results.csv", "aggregate/summary.csv"}) {
      INFO(f);
      CHECK(test::read_text((got / f).string()) ==
            test::read_text((fs::path(tmp.file("sref")) / "sw" / f).string()));
    }
  }
  // The moments reached different writers.
  CHECK(failed_files.size() >= 6);
  std::string names;
  for (const auto& f : failed_files)
    names += f + " ";
  WARN("writes refused by the full disk: " << names);
}
