// One writer per folder, with real processes: a second `lengen run` on a run directory in use
// refuses naming the holder, `--wait` waits for it, and the lock of a SIGKILLed holder is free
// at once (the kernel drops it); a second `lengen sweep` on a sweep folder in use refuses too.
#include "helpers.h"

#include "lengen/core/lock.h"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

using namespace lengen;
namespace fs = std::filesystem;
using Catch::Contains;

namespace {

// Long enough (several seconds) that a second process starts while the first still trains.
const char* kSlow = R"(name: locked
seed: 1
task: {name: addition, train_digits: [1, 3], eval_digits: [1, 3]}
model: {layers: 1, heads: 2, d_model: 16, d_ff: 32}
position: [nope]
train: {steps: 6000, batch_size: 4, log_every: 500, checkpoint_every: 500}
eval: {samples: 4}
)";

// Starts `args` in the background with output to `log`; returns its PID.
int64_t start(const std::string& args, const std::string& log, const test::TempDir& tmp) {
  const std::string pid_file = tmp.file("started.pid");
  std::system((std::string(LENGEN_CLI) + " " + args + " > " + log + " 2>&1 & echo $! > " + pid_file)
                  .c_str());
  int64_t pid = 0;
  std::ifstream(pid_file) >> pid;
  return pid;
}

bool alive(int64_t pid) {
  return ::kill(static_cast<pid_t>(pid), 0) == 0;
}

// Waits (up to a minute) for `done`; false when it never held.
template <typename F>
bool eventually(F done) {
  for (int i = 0; i < 1200; ++i) {
    if (done())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Reaps a background child of the shell (it is not ours to waitpid): waits until it is gone.
bool gone(int64_t pid) {
  return eventually([&] {
    return !alive(pid) || test::read_text("/proc/" + std::to_string(pid) + "/stat").find(") Z") !=
                              std::string::npos;
  });
}

}  // namespace

TEST_CASE(
    "lock: a run directory in use refuses a second lengen run, --wait waits, a killed holder's "
    "lock is free",
    "[cli][lock]") {
  test::TempDir tmp;
  test::write_text(tmp.file("exp.yaml"), kSlow);
  const std::string out = tmp.file("runs");
  const std::string run = "run " + tmp.file("exp.yaml") + " --set output_dir=" + out;
  const std::string lock = (fs::path(out) / "locked" / "1" / "lengen.lock").string();

  const int64_t first = start(run, tmp.file("first.log"), tmp);
  REQUIRE(eventually(
      [&] { return FolderLock::holder(lock).find("PID " + std::to_string(first)) == 0; }));
  CHECK_THAT(FolderLock::holder(lock), Contains("lengen run"));

  // A second writer refuses, naming the holder and how to wait; it has written nothing.
  int rc = 0;
  const std::string refused = test::lengen_cli(run + " --resume", &rc);
  CHECK(rc != 0);
  CHECK_THAT(refused, Contains("is in use: PID " + std::to_string(first) + " on host "));
  CHECK_THAT(refused, Contains("--wait"));
  REQUIRE(alive(first));

  // A third waits, and goes on once the holder is killed (SIGKILL: no handler runs, the kernel
  // drops its lock); it resumes from the first one's checkpoints and finishes.
  const int64_t third = start(run + " --resume --wait", tmp.file("third.log"), tmp);
  REQUIRE(eventually([&] {
    return test::read_text(tmp.file("third.log")).find("waiting for it to finish") !=
           std::string::npos;
  }));
  CHECK(alive(third));
  REQUIRE(eventually([&] { return fs::exists(fs::path(out) / "locked" / "1" / "checkpoints"); }));
  ::kill(static_cast<pid_t>(first), SIGKILL);
  REQUIRE(gone(first));
  REQUIRE(gone(third));
  const std::string log = test::read_text(tmp.file("third.log"));
  INFO(log);
  CHECK_THAT(log, Contains("the lock is free now"));
  CHECK(fs::exists(fs::path(out) / "locked" / "1" / "eval" / "summary.json"));
  CHECK(fs::exists(fs::path(out) / "locked" / "1" / "checkpoints" / "step-00006000.safetensors"));
  CHECK(FolderLock::holder(lock).empty());  // released on exit, naming no one

  // Free again: a plain run takes the lock without waiting.
  CHECK_THAT(test::lengen_cli(run + " --resume"), !Contains("is in use"));
}

TEST_CASE("lock: a sweep folder in use refuses a second lengen sweep; --status still reads it",
          "[cli][lock]") {
  test::TempDir tmp;
  test::write_text(tmp.file("base.yaml"), kSlow);
  test::write_text(tmp.file("sw.yaml"),
                   "name: sw\nbase: base.yaml\ngrid: {seed: [0, 1]}\noutput_dir: " +
                       tmp.file("sweeps") + "\nexecutor: {workers: 1, threads_per_run: 1}\n");
  const std::string sweep = "sweep " + tmp.file("sw.yaml");
  const std::string lock = tmp.file("sweeps/sw/lengen.lock");
  const int64_t first = start(sweep, tmp.file("first.log"), tmp);
  REQUIRE(eventually(
      [&] { return FolderLock::holder(lock).find("PID " + std::to_string(first)) == 0; }));
  int rc = 0;
  const std::string refused = test::lengen_cli(sweep, &rc);
  CHECK(rc != 0);
  CHECK_THAT(refused, Contains("is in use: PID " + std::to_string(first)));
  CHECK_THAT(test::lengen_cli(sweep + " --status"), Contains("2 points"));
  // Stopped (SIGTERM: the sweep stops its points, each after a checkpoint), then run again to the
  // end.
  ::kill(static_cast<pid_t>(first), SIGTERM);
  REQUIRE(gone(first));
  const std::string second = test::lengen_cli(sweep);
  CHECK_THAT(second, Contains("aggregated 2 completed points"));
  CHECK(FolderLock::holder(lock).empty());
}
