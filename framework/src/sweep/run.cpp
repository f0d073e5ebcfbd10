// Running a sweep's points: their state from the markers in each run folder (RunDir::sweep_marker),
// one point (run_point), the local pool (run_local).
#include "util.h"

#include "lengen/core/error.h"
#include "lengen/core/fault.h"
#include "lengen/core/file.h"
#include "lengen/core/lock.h"
#include "lengen/core/log.h"
#include "lengen/core/run_dir.h"
#include "lengen/experiment/experiment.h"
#include "lengen/report/report.h"
#include "lengen/sweep/sweep.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;

namespace lengen::sweep {

namespace {

using json = nlohmann::json;

bool pid_alive(int64_t pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

std::string hostname() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

bool slurm_job_listed(const std::string& job) {
  int status = 0;
  std::string out = capture("squeue -h -o %i -j " + job, &status);
  return status == 0 && out.find_first_not_of(" \n") != std::string::npos;
}

std::atomic<bool> g_stop{false};

void on_stop_signal(int) {
  g_stop = true;
}

}  // namespace

const char* state_name(State s) {
  switch (s) {
    case State::kDone:
      return "done";
    case State::kRunning:
      return "running";
    case State::kFailed:
      return "failed";
    case State::kInterrupted:
      return "interrupted";
    case State::kMissing:
      return "missing";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------
// State and running

State point_state(const Point& p) {
  if (fs::exists(RunDir(p.run_dir).summary()))
    return State::kDone;
  const fs::path running = RunDir(p.run_dir).sweep_marker("running");
  const fs::path failed = RunDir(p.run_dir).sweep_marker("failed");
  if (fs::exists(running)) {
    try {
      json m = json::parse(read_text(running.string()));
      const std::string job = m.value("slurm_job", "");
      if (!job.empty()) {
        if (slurm_job_listed(job))
          return State::kRunning;
      } else if (m.value("host", "") == hostname() && pid_alive(m.value("pid", int64_t{0}))) {
        return State::kRunning;
      }
    } catch (const std::exception&) {
      // a torn marker: treat as interrupted
    }
    return State::kInterrupted;
  }
  if (fs::exists(failed))
    return State::kFailed;
  if (fs::exists(RunDir(p.run_dir).sweep_marker("stopped")))
    return State::kInterrupted;
  return State::kMissing;
}

namespace {

// fork + exec `lengen run CONFIG --resume` with output appended to the point's log. `wait`: the
// run waits for the point's run directory to be free (a Slurm requeue whose first task is
// still stopping) instead of refusing.
pid_t spawn_point(const Point& p,
                  const std::string& lengen,
                  int64_t threads,
                  const std::string& gpu,
                  bool wait = false) {
  const std::string log = RunDir(p.run_dir).sweep_log().string();
  const std::string cfg = RunDir(p.run_dir).config().string();
  const std::string threads_set = fmt::format("threads={}", threads);
  pid_t pid = ::fork();
  if (pid < 0)
    throw Error(fmt::format("cannot start point '{}': fork failed", p.name));
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    if (!gpu.empty())
      ::setenv("CUDA_VISIBLE_DEVICES", gpu.c_str(), 1);
    ::setpgid(0, 0);  // a terminal's Ctrl-C reaches the sweep, which stops the children
    std::vector<const char*> args = {lengen.c_str(), "run", cfg.c_str(), "--resume"};
    if (threads > 0) {
      args.push_back("--set");
      args.push_back(threads_set.c_str());
    }
    if (wait)
      args.push_back("--wait");
    args.push_back(nullptr);
    ::execv(lengen.c_str(), const_cast<char* const*>(args.data()));
    ::_exit(127);
  }
  return pid;
}

void mark_running(const Point& p, int64_t pid, const std::string& job) {
  fs::remove(RunDir(p.run_dir).sweep_marker("failed"));
  fs::remove(RunDir(p.run_dir).sweep_marker("stopped"));
  json m{{"pid", pid}, {"host", hostname()}, {"started", std::time(nullptr)}};
  if (!job.empty())
    m["slurm_job"] = job;
  write_file_atomic(RunDir(p.run_dir).sweep_marker("running").string(), m.dump() + "\n");
}

// Stopped on request (Ctrl-C, SIGTERM before a time limit, a requeue): resumable.
void mark_stopped(const Point& p, int status) {
  fs::remove(RunDir(p.run_dir).sweep_marker("running"));
  json m{{"exit_status", status}, {"stopped", std::time(nullptr)}};
  write_file_atomic(RunDir(p.run_dir).sweep_marker("stopped").string(), m.dump() + "\n");
}

void mark_finished(const Point& p, int status) {
  fs::remove(RunDir(p.run_dir).sweep_marker("running"));
  if (status != 0) {
    json m{{"exit_status", status},
           {"log", RunDir(p.run_dir).sweep_log().string()},
           {"finished", std::time(nullptr)}};
    write_file_atomic(RunDir(p.run_dir).sweep_marker("failed").string(), m.dump() + "\n");
  }
}

int exit_status(int raw) {
  if (WIFEXITED(raw))
    return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw))
    return 128 + WTERMSIG(raw);
  return -1;
}

}  // namespace

int run_point(const Sweep& s,
              const Point& p,
              const std::string& lengen,
              int64_t threads,
              const std::string& slurm_job) {
  (void)s;
  fs::create_directories(p.run_dir);
  pid_t pid = spawn_point(p, lengen, threads, "", !slurm_job.empty());
  mark_running(p, slurm_job.empty() ? pid : ::getpid(), slurm_job);
  // Forward a stop request (Slurm sends SIGTERM before a time limit or a requeue).
  g_stop = false;
  auto old_int = std::signal(SIGINT, on_stop_signal);
  auto old_term = std::signal(SIGTERM, on_stop_signal);
  int raw = 0;
  bool forwarded = false;
  while (::waitpid(pid, &raw, WNOHANG) == 0) {
    if (g_stop && !forwarded) {
      ::kill(pid, SIGTERM);
      forwarded = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  const int status = exit_status(raw);
  if (forwarded || WIFSIGNALED(raw) || status == kExitInterrupted) {
    // Stopped on request (by us, or by anyone: `lengen run` exits kExitInterrupted after its
    // checkpoint when it receives SIGTERM/SIGINT, e.g. from Slurm tearing the job down), or
    // killed (SIGKILL, OOM): no verdict; interrupted and resumable.
    mark_stopped(p, status);
    return status;
  }
  mark_finished(p, status);
  return status;
}

double sweep_eta_seconds(double mean_point_s,
                         const std::vector<double>& running_elapsed_s,
                         int64_t not_started,
                         int64_t workers) {
  double work = mean_point_s * static_cast<double>(std::max<int64_t>(0, not_started));
  for (double e : running_elapsed_s)
    work += std::max(0.0, mean_point_s - e);
  return work / static_cast<double>(std::max<int64_t>(1, workers));
}

int64_t local_workers(int64_t jobs, int64_t file_workers, int64_t gpus, int64_t points_per_gpu) {
  if (jobs > 0)
    return jobs;
  if (file_workers > 1 || gpus == 0)
    return std::max<int64_t>(1, file_workers);
  return gpus * std::max<int64_t>(1, points_per_gpu);
}

std::string gpu_for_slot(size_t slot, const std::vector<std::string>& gpus) {
  return gpus.empty() ? "" : gpus[slot % gpus.size()];
}

namespace {

// One worker of a local sweep: the point it runs, if any.
struct Slot {
  pid_t pid = 0;
  const Point* point = nullptr;
  std::chrono::steady_clock::time_point start;
};

// The sweep's ETA when `done` has just finished: from the mean duration of the points done so
// far and how long the other running points have run.
double eta_seconds(const std::vector<Slot>& slots,
                   const Slot& done,
                   std::chrono::steady_clock::time_point now,
                   double mean_point_seconds,
                   int64_t waiting,
                   int64_t workers) {
  std::vector<double> running;
  for (const auto& other : slots) {
    if (other.pid > 0 && &other != &done) {
      running.push_back(std::chrono::duration<double>(now - other.start).count());
    }
  }
  return sweep_eta_seconds(mean_point_seconds, running, waiting, workers);
}

}  // namespace

int64_t run_local(const Sweep& s,
                  const std::string& lengen,
                  int64_t workers,
                  const std::vector<std::string>& gpus) {
  auto log = logger("sweep");
  std::vector<const Point*> todo;
  for (const auto& p : s.points) {
    State st = point_state(p);
    if (st == State::kDone || st == State::kRunning)
      continue;
    todo.push_back(&p);
  }
  const int64_t cores = usable_cores();
  const int64_t threads =
      s.threads_per_run > 0 ? s.threads_per_run : std::max<int64_t>(1, cores / workers);
  log->info("{}: {} points, {} to run, {} at a time, {} threads each{}",
            s.name,
            s.points.size(),
            todo.size(),
            workers,
            threads,
            gpus.empty() ? "" : fmt::format(", GPUs {}", join(gpus, ",")));
  g_stop = false;
  auto old_int = std::signal(SIGINT, on_stop_signal);
  auto old_term = std::signal(SIGTERM, on_stop_signal);

  std::vector<Slot> slots(static_cast<size_t>(workers));
  size_t next = 0;
  int64_t failures = 0, finished = 0, succeeded = 0;
  double finished_s = 0.0;  // summed durations of the points that succeeded, for the ETA
  bool stopping = false;
  while (true) {
    if (g_stop && !stopping) {
      stopping = true;
      log->warn("stopping: no new points; running points are asked to checkpoint and exit");
      for (auto& sl : slots) {
        if (sl.pid > 0)
          ::kill(sl.pid, SIGTERM);
      }
    }
    bool any = false;
    for (size_t i = 0; i < slots.size(); ++i) {
      Slot& sl = slots[i];
      if (sl.pid > 0) {
        int raw = 0;
        if (::waitpid(sl.pid, &raw, WNOHANG) == sl.pid) {
          const int status = exit_status(raw);
          const auto now = std::chrono::steady_clock::now();
          const double secs = std::chrono::duration<double>(now - sl.start).count();
          if (stopping || WIFSIGNALED(raw) || status == kExitInterrupted) {
            // Stopped on request, or killed by a signal: interrupted, resumable, not failed.
            mark_stopped(*sl.point, status);
            log->info("stopped {} (resumable)", sl.point->name);
          } else {
            mark_finished(*sl.point, status);
            fault::reached("sweep.point_done");
            ++finished;
            if (status != 0) {
              ++failures;
              log->error("point {} failed (exit {}); log: {}",
                         sl.point->name,
                         status,
                         RunDir(sl.point->run_dir).sweep_log().string());
            } else {
              finished_s += secs;
              ++succeeded;
              const double eta = eta_seconds(slots,
                                             sl,
                                             now,
                                             finished_s / static_cast<double>(succeeded),
                                             static_cast<int64_t>(todo.size() - next),
                                             workers);
              log->info("done {} in {:.0f}s [{}/{}] ETA {:.0f}s",
                        sl.point->name,
                        secs,
                        finished,
                        todo.size(),
                        eta);
            }
          }
          sl.pid = 0;
          sl.point = nullptr;
        }
      }
      // A second `lengen sweep` on the same file (started later to add workers, or on
      // another shell) may have taken or finished a point since the list was made: check
      // again just before starting one, so that no two processes train one run directory.
      while (sl.pid == 0 && !stopping && next < todo.size()) {
        const State now_state = point_state(*todo[next]);
        if (now_state != State::kDone && now_state != State::kRunning)
          break;
        log->info("skip {}: {} in another process", todo[next]->name, state_name(now_state));
        ++next;
      }
      if (sl.pid == 0 && !stopping && next < todo.size()) {
        const Point* p = todo[next++];
        const std::string gpu = gpu_for_slot(i, gpus);
        sl.pid = spawn_point(*p, lengen, threads, gpu);
        sl.point = p;
        sl.start = std::chrono::steady_clock::now();
        mark_running(*p, sl.pid, "");
        log->info("start {} -> {}", p->name, p->run_dir);
      }
      any = any || sl.pid > 0;
    }
    if (!any && (stopping || next >= todo.size()))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  return failures;
}

int64_t run_here(const Sweep& whole,
                 const Sweep& s,
                 const std::string& lengen,
                 int64_t workers,
                 const std::vector<std::string>& gpus,
                 bool wait) {
  // One `lengen sweep` writes the folder at a time (the plan, the points it starts, the aggregate).
  const FolderLock lock(s.dir, "", wait, "`lengen sweep ... --wait`");
  lock.remove_torn_files();
  write_plan(whole);
  const int64_t failures = run_local(s, lengen, workers, gpus);
  report_aggregate(s.dir, aggregate(s.dir, -1), true);
  return failures;
}

}  // namespace lengen::sweep
