#include "lengen/sweep/sweep.h"

#include "lengen/config/node.h"
#include "lengen/core/error.h"
#include "lengen/core/log.h"
#include "lengen/experiment/experiment.h"
#include "lengen/report/paper.h"
#include "lengen/report/report.h"
#include "lengen/train/checkpoint.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace lengen::sweep {

namespace {

using json = nlohmann::json;

std::string flow(const YAML::Node& n) {
  YAML::Emitter e;
  e.SetMapFormat(YAML::Flow);
  e.SetSeqFormat(YAML::Flow);
  e << n;
  return e.c_str();
}

// A label for a value in a point name: scalars as written; a component map by its name (with
// its options when `detailed`); a list by its elements' labels joined with '+'.
std::string label(const YAML::Node& n, bool detailed) {
  if (n.IsScalar()) return n.as<std::string>();
  if (n.IsMap() && n["name"]) {
    std::string s = n["name"].as<std::string>();
    if (!detailed) return s;
    for (const auto& kv : n) {
      const auto k = kv.first.as<std::string>();
      if (k != "name") s += "_" + k + "=" + label(kv.second, true);
    }
    return s;
  }
  if (n.IsSequence()) {
    std::vector<std::string> parts;
    for (const auto& e : n) parts.push_back(label(e, detailed));
    return join(parts, "+");
  }
  return flow(n);
}

// Whether a point's values satisfy a paper row's `where:`: each key is a sweep axis whose value
// is the one written (compared as YAML) or, for a scalar, the value's component label
// (`coupling` for `[{name: coupling, max_position: 101}]`).
bool paper_row_matches(const PaperRow& row, const std::vector<std::pair<std::string, YAML::Node>>& values,
                       const std::vector<std::string>& axes, const ConfigNode& row_node) {
  for (const auto& kw : row.where) {
    const std::string& k = kw.first;
    const YAML::Node& want = kw.second;
    if (std::find(axes.begin(), axes.end(), k) == axes.end()) {
      row_node.child("where").key_node(k).fail(
          fmt::format("paper row '{}': '{}' is not an axis of this sweep (axes: {})", row.label, k, join(axes, ", ")));
    }
    auto it = std::find_if(values.begin(), values.end(), [&](const auto& kv) { return kv.first == k; });
    if (it == values.end()) return false;  // an explicit point that does not set this key
    const YAML::Node& have = it->second;
    const bool same = flow(want) == flow(have) ||
                      (want.IsScalar() && (want.as<std::string>() == label(have, false) ||
                                           want.as<std::string>() == label(have, true)));
    if (!same) return false;
  }
  return true;
}

// Safe for a folder name.
std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) {
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '=' ||
            c == '+' || c == ',')
               ? c
               : '_';
  }
  return out;
}

// The short form of a key for names: its last component.
std::string short_key(const std::string& key) {
  auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

// One axis: a key (or several, for a zip group) and its values.
struct Axis {
  std::vector<std::string> keys;
  std::vector<std::vector<YAML::Node>> values;  // values[i][k]: i-th value of keys[k]
  ConfigNode where;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path markers(const std::string& run_dir, const char* what) { return fs::path(run_dir) / what; }

bool pid_alive(int64_t pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

std::string hostname() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

// Runs a command, returning its stdout (and exit status).
std::string capture(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = ::pclose(p);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

bool slurm_job_listed(const std::string& job) {
  int status = 0;
  std::string out = capture("squeue -h -o %i -j " + job, &status);
  return status == 0 && out.find_first_not_of(" \n") != std::string::npos;
}

std::atomic<bool> g_stop{false};
void on_stop_signal(int) { g_stop = true; }

}  // namespace

const char* state_name(State s) {
  switch (s) {
    case State::kDone: return "done";
    case State::kRunning: return "running";
    case State::kFailed: return "failed";
    case State::kInterrupted: return "interrupted";
    case State::kMissing: return "missing";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------
// Planning

Sweep load_sweep(const std::string& path, const std::vector<std::string>& overrides) {
  Sweep s;
  s.file = fs::absolute(path).string();
  ConfigNode root = apply_overrides(load_config_file(path), overrides);
  MapReader r(root);
  s.name = r.get_string("name", fs::path(path).stem().string());
  ConfigNode base = r.child("base");
  ConfigNode extends = r.child("extends");
  if (base.defined() == extends.defined()) {
    root.fail("a sweep needs exactly one of 'base:' or 'extends:' (the experiment file it varies)");
  }
  const ConfigNode& base_node = base.defined() ? base : extends;
  fs::path bp = base_node.as_string();
  if (bp.is_relative()) bp = fs::path(s.file).parent_path() / bp;
  if (!fs::exists(bp)) base_node.fail(fmt::format("no such experiment file: {}", bp.string()));
  s.base = fs::weakly_canonical(bp).string();
  fs::path out = r.get_string("output_dir", "sweeps");
  s.dir = fs::absolute(out / sanitize(s.name)).lexically_normal().string();

  // Overrides for every point.
  std::vector<std::string> common;
  ConfigNode set = r.child("set");
  if (set.defined()) {
    if (!set.is_map()) set.fail("'set:' is a map of key: value applied to every point");
    for (const auto& k : set.keys()) common.push_back(k + "=" + flow(set.child(k).yaml()));
  }

  // Axes: grid keys, then zip groups.
  std::vector<Axis> axes;
  ConfigNode grid = r.child("grid");
  if (grid.defined()) {
    if (!grid.is_map()) grid.fail("'grid:' is a map of key: [values]");
    for (const auto& k : grid.keys()) {
      ConfigNode v = grid.child(k);
      if (!v.is_sequence() || v.size() == 0) v.fail("a grid axis is a non-empty list of values");
      Axis a{{k}, {}, v};
      for (size_t i = 0; i < v.size(); ++i) a.values.push_back({v.at(i).yaml()});
      axes.push_back(std::move(a));
    }
  }
  ConfigNode zip = r.child("zip");
  if (zip.defined()) {
    if (!zip.is_sequence()) zip.fail("'zip:' is a list of groups, each a map of key: [values] of one length");
    for (size_t g = 0; g < zip.size(); ++g) {
      ConfigNode group = zip.at(g);
      if (!group.is_map() || group.size() == 0) group.fail("a zip group is a map of key: [values]");
      Axis a{group.keys(), {}, group};
      size_t n = 0;
      for (const auto& k : a.keys) {
        ConfigNode v = group.child(k);
        if (!v.is_sequence() || v.size() == 0) v.fail("a zip member is a non-empty list of values");
        if (n == 0) n = v.size();
        if (v.size() != n) {
          v.fail(fmt::format("zip members vary together and need equal lengths: {} has {} values, "
                             "the first member {}", k, v.size(), n));
        }
      }
      for (size_t i = 0; i < n; ++i) {
        std::vector<YAML::Node> row;
        for (const auto& k : a.keys) row.push_back(group.child(k).at(i).yaml());
        a.values.push_back(row);
      }
      axes.push_back(std::move(a));
    }
  }
  std::set<std::string> seen_keys;
  for (const auto& a : axes) {
    for (const auto& k : a.keys) {
      if (!seen_keys.insert(k).second) a.where.fail(fmt::format("the key '{}' is varied twice", k));
      s.axes.push_back(k);
    }
  }

  // Cartesian product (first axis slowest), then explicit points.
  struct Raw {
    std::vector<std::pair<std::string, YAML::Node>> values;
    ConfigNode where;
    bool explicit_point = false;  // from `points:`: named by all of its keys
  };
  std::vector<Raw> raws;
  if (!axes.empty()) {
    std::vector<size_t> idx(axes.size(), 0);
    while (true) {
      Raw raw{{}, axes.front().where};
      for (size_t a = 0; a < axes.size(); ++a) {
        for (size_t k = 0; k < axes[a].keys.size(); ++k) {
          raw.values.emplace_back(axes[a].keys[k], axes[a].values[idx[a]][k]);
        }
      }
      raws.push_back(std::move(raw));
      size_t a = axes.size();
      while (a > 0) {
        --a;
        if (++idx[a] < axes[a].values.size()) break;
        idx[a] = 0;
        if (a == 0) {
          a = axes.size() + 1;
          break;
        }
      }
      if (a == axes.size() + 1) break;
    }
  }
  ConfigNode points = r.child("points");
  if (points.defined()) {
    if (!points.is_sequence()) points.fail("'points:' is a list of maps of key: value");
    for (size_t i = 0; i < points.size(); ++i) {
      ConfigNode p = points.at(i);
      if (!p.is_map()) p.fail("a point is a map of key: value");
      Raw raw{{}, p, true};
      for (const auto& k : p.keys()) {
        raw.values.emplace_back(k, p.child(k).yaml());
        if (std::find(s.axes.begin(), s.axes.end(), k) == s.axes.end()) s.axes.push_back(k);
      }
      raws.push_back(std::move(raw));
    }
  }

  // Executors and aggregation.
  ConfigNode ex = r.child("executor");
  if (ex.defined()) {
    MapReader er(ex);
    s.workers = er.get_int("workers", s.workers);
    s.threads_per_run = er.get_int("threads_per_run", s.threads_per_run);
    s.points_per_gpu = er.get_int("points_per_gpu", s.points_per_gpu);
    er.finish();
    if (s.workers < 1) ex.child("workers").fail("executor.workers must be >= 1");
    if (s.points_per_gpu < 1) ex.child("points_per_gpu").fail("executor.points_per_gpu must be >= 1");
  }
  ConfigNode sl = r.child("slurm");
  if (sl.defined()) {
    MapReader sr(sl);
    s.slurm.partition = sr.get_string("partition", "");
    s.slurm.time = sr.get_string("time", "");
    s.slurm.account = sr.get_string("account", "");
    s.slurm.qos = sr.get_string("qos", "");
    s.slurm.mem = sr.get_string("mem", "");
    s.slurm.cpus_per_task = sr.get_int("cpus_per_task", 0);
    s.slurm.gpus_per_task = sr.get_int("gpus_per_task", 0);
    s.slurm.array_limit = sr.get_int("array_limit", 0);
    s.slurm.setup = sr.get_string("setup", "");
    ConfigNode extra = sr.child("extra");
    if (extra.defined()) s.slurm.extra = extra.as_string_list();
    sr.finish();
  }
  const ConfigNode paper = r.child("paper");
  ConfigNode ag = r.child("aggregate");
  if (ag.defined()) {
    MapReader ar(ag);
    s.threshold = ar.get_float("threshold", s.threshold);
    ar.finish();
  }
  r.finish();
  if (raws.empty()) root.fail("the sweep varies nothing: give 'grid:', 'zip:' or 'points:'");

  // Name, validate and place every point. Names use the keys that actually vary.
  // Short labels (component names only) where they tell a key's values apart.
  std::map<std::string, std::set<std::string>> distinct, short_labels;
  for (const auto& raw : raws) {
    for (const auto& [k, v] : raw.values) {
      distinct[k].insert(flow(v));
      short_labels[k].insert(label(v, false));
    }
  }
  std::set<std::string> names;
  std::vector<std::vector<std::string>> row_configs;  // paper row -> configurations it matches
  for (size_t i = 0; i < raws.size(); ++i) {
    Point p;
    p.index = static_cast<int64_t>(i);
    std::vector<std::string> parts, config_parts;
    for (const auto& [k, v] : raws[i].values) {
      p.varied.emplace_back(k, flow(v));
      if (k == "seed") continue;
      if (distinct[k].size() > 1 || raws.size() == 1 || raws[i].explicit_point) {
        const bool detailed = short_labels[k].size() < distinct[k].size();
        config_parts.push_back(short_key(k) + "=" + label(v, detailed));
      }
    }
    p.config_name = sanitize(config_parts.empty() ? s.name : join(config_parts, ","));
    std::vector<std::string> ov = common;
    for (const auto& [k, v] : raws[i].values) ov.push_back(k + "=" + flow(v));
    ov.push_back("output_dir=" + (fs::path(s.dir) / "runs").string());
    ov.push_back("name=" + p.config_name);
    Experiment e;
    try {
      e = Experiment::load(s.base, ov);
    } catch (const Error& err) {
      raws[i].where.fail(fmt::format("point {} ({}) is not a valid experiment: {}", i,
                                     join(config_parts, ","), err.what()));
    }
    p.seed = static_cast<int64_t>(e.seed);
    p.name = fmt::format("{},seed={}", p.config_name, p.seed);
    if (!names.insert(p.name).second) {
      raws[i].where.fail(fmt::format("two points are the same experiment '{}'; vary something else or "
                                     "drop one", p.name));
    }
    p.overrides = ov;
    p.run_dir = e.run_dir();
    if (i == 0) {
      // The sweep's `paper:` rows, or the base experiment's values beside every configuration.
      s.paper = paper.defined() ? PaperReference::from_config(paper, e.eval.axes(), true) : e.paper;
      row_configs.resize(s.paper.rows.size());
    }
    for (size_t ri = 0; ri < s.paper.rows.size(); ++ri) {
      if (paper_row_matches(s.paper.rows[ri], raws[i].values, s.axes, paper.child("rows").at(ri)) &&
          std::find(row_configs[ri].begin(), row_configs[ri].end(), p.config_name) == row_configs[ri].end()) {
        row_configs[ri].push_back(p.config_name);
      }
    }
    s.points.push_back(std::move(p));
  }
  std::map<std::string, std::string> row_of;
  for (size_t ri = 0; ri < s.paper.rows.size(); ++ri) {
    PaperRow& row = s.paper.rows[ri];
    if (row.where.empty()) continue;  // beside every configuration
    const ConfigNode where = paper.child("rows").at(ri).child("where");
    if (row_configs[ri].empty()) {
      where.fail(fmt::format("paper row '{}' matches no configuration of the sweep (a value is matched as "
                             "written on the axis, or by its component name)", row.label));
    }
    for (const auto& c : row_configs[ri]) {
      if (!row_of.emplace(c, row.label).second) {
        where.fail(fmt::format("configuration {} matches two paper rows: '{}' and '{}'", c, row_of[c], row.label));
      }
    }
    row.configs = row_configs[ri];
  }
  return s;
}

void write_plan(const Sweep& s) {
  fs::create_directories(s.dir);
  json points = json::array();
  for (const auto& p : s.points) {
    Experiment e = Experiment::load(s.base, p.overrides);
    fs::create_directories(p.run_dir);
    const fs::path cfg = fs::path(p.run_dir) / "config.yaml";
    const std::string text = e.resolved_yaml();
    if (fs::exists(cfg)) {
      // What defines the experiment: not the provenance, not the executor's thread count.
      // Nor the paper's reference figures (`paper:` and its indented lines).
      auto body = [](const std::string& y) {
        std::istringstream in(y.substr(0, y.find("provenance:")));
        std::string out;
        bool in_paper = false;
        for (std::string line; std::getline(in, line);) {
          if (!line.empty() && line[0] != ' ' && line[0] != '-') in_paper = line.rfind("paper:", 0) == 0;
          if (!in_paper && line.rfind("threads:", 0) != 0) out += line + "\n";
        }
        return out;
      };
      if (body(read_text(cfg.string())) != body(text) && fs::exists(fs::path(p.run_dir) / "checkpoints")) {
        throw Error(fmt::format("{}: point '{}' already ran with a different config ({}); move its run "
                                "directory away or restore the sweep file",
                                s.file, p.name, cfg.string()));
      }
    }
    write_file_atomic(cfg.string(), text);
    json varied = json::object();
    for (const auto& [k, v] : p.varied) varied[k] = v;
    points.push_back({{"index", p.index},
                      {"name", p.name},
                      {"config", p.config_name},
                      {"seed", p.seed},
                      {"varied", varied},
                      {"run_dir", fs::relative(p.run_dir, s.dir).string()}});
  }
  json manifest{{"name", s.name},      {"file", s.file},           {"base", s.base},
                {"axes", s.axes},      {"threshold", s.threshold}, {"points", points}};
  if (!s.paper.empty()) manifest["paper"] = s.paper.to_json();
  write_file_atomic((fs::path(s.dir) / "sweep.json").string(), manifest.dump(2) + "\n");
}

// ---------------------------------------------------------------------------------------
// State and running

State point_state(const Point& p) {
  if (fs::exists(fs::path(p.run_dir) / "eval" / "summary.json")) return State::kDone;
  const fs::path running = markers(p.run_dir, "sweep-running.json");
  const fs::path failed = markers(p.run_dir, "sweep-failed.json");
  if (fs::exists(running)) {
    try {
      json m = json::parse(read_text(running.string()));
      const std::string job = m.value("slurm_job", "");
      if (!job.empty()) {
        if (slurm_job_listed(job)) return State::kRunning;
      } else if (m.value("host", "") == hostname() && pid_alive(m.value("pid", int64_t{0}))) {
        return State::kRunning;
      }
    } catch (const std::exception&) {
      // a torn marker: treat as interrupted
    }
    return State::kInterrupted;
  }
  if (fs::exists(failed)) return State::kFailed;
  if (fs::exists(markers(p.run_dir, "sweep-stopped.json"))) return State::kInterrupted;
  return State::kMissing;
}

namespace {

// fork + exec `lengen run CONFIG --resume` with output appended to the point's log.
pid_t spawn_point(const Point& p, const std::string& lengen, int64_t threads, const std::string& gpu) {
  const std::string log = (fs::path(p.run_dir) / "sweep.log").string();
  const std::string cfg = (fs::path(p.run_dir) / "config.yaml").string();
  const std::string threads_set = fmt::format("threads={}", threads);
  pid_t pid = ::fork();
  if (pid < 0) throw Error(fmt::format("cannot start point '{}': fork failed", p.name));
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    if (!gpu.empty()) ::setenv("CUDA_VISIBLE_DEVICES", gpu.c_str(), 1);
    ::setpgid(0, 0);  // a terminal's Ctrl-C reaches the sweep, which stops the children
    if (threads > 0) {
      ::execl(lengen.c_str(), lengen.c_str(), "run", cfg.c_str(), "--resume", "--set", threads_set.c_str(),
              static_cast<char*>(nullptr));
    } else {
      ::execl(lengen.c_str(), lengen.c_str(), "run", cfg.c_str(), "--resume", static_cast<char*>(nullptr));
    }
    ::_exit(127);
  }
  return pid;
}

void mark_running(const Point& p, int64_t pid, const std::string& job) {
  fs::remove(markers(p.run_dir, "sweep-failed.json"));
  fs::remove(markers(p.run_dir, "sweep-stopped.json"));
  json m{{"pid", pid}, {"host", hostname()}, {"started", std::time(nullptr)}};
  if (!job.empty()) m["slurm_job"] = job;
  write_file_atomic(markers(p.run_dir, "sweep-running.json").string(), m.dump() + "\n");
}

// Stopped on request (Ctrl-C, SIGTERM before a time limit, a requeue): resumable.
void mark_stopped(const Point& p, int status) {
  fs::remove(markers(p.run_dir, "sweep-running.json"));
  json m{{"exit_status", status}, {"stopped", std::time(nullptr)}};
  write_file_atomic(markers(p.run_dir, "sweep-stopped.json").string(), m.dump() + "\n");
}

void mark_finished(const Point& p, int status) {
  fs::remove(markers(p.run_dir, "sweep-running.json"));
  if (status != 0) {
    json m{{"exit_status", status}, {"log", (fs::path(p.run_dir) / "sweep.log").string()},
           {"finished", std::time(nullptr)}};
    write_file_atomic(markers(p.run_dir, "sweep-failed.json").string(), m.dump() + "\n");
  }
}

int exit_status(int raw) {
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) return 128 + WTERMSIG(raw);
  return -1;
}

}  // namespace

int run_point(const Sweep& s, const Point& p, const std::string& lengen, int64_t threads,
              const std::string& slurm_job) {
  (void)s;
  fs::create_directories(p.run_dir);
  pid_t pid = spawn_point(p, lengen, threads, "");
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

double sweep_eta_seconds(double mean_point_s, const std::vector<double>& running_elapsed_s,
                         int64_t not_started, int64_t workers) {
  double work = mean_point_s * static_cast<double>(std::max<int64_t>(0, not_started));
  for (double e : running_elapsed_s) work += std::max(0.0, mean_point_s - e);
  return work / static_cast<double>(std::max<int64_t>(1, workers));
}

int64_t local_workers(int64_t jobs, int64_t file_workers, int64_t gpus, int64_t points_per_gpu) {
  if (jobs > 0) return jobs;
  if (file_workers > 1 || gpus == 0) return std::max<int64_t>(1, file_workers);
  return gpus * std::max<int64_t>(1, points_per_gpu);
}

std::string gpu_for_slot(size_t slot, const std::vector<std::string>& gpus) {
  return gpus.empty() ? "" : gpus[slot % gpus.size()];
}

int64_t run_local(const Sweep& s, const std::string& lengen, int64_t workers, const std::vector<std::string>& gpus) {
  auto log = logger("sweep");
  std::vector<const Point*> todo;
  for (const auto& p : s.points) {
    State st = point_state(p);
    if (st == State::kDone || st == State::kRunning) continue;
    todo.push_back(&p);
  }
  const int64_t cores = usable_cores();
  const int64_t threads = s.threads_per_run > 0 ? s.threads_per_run : std::max<int64_t>(1, cores / workers);
  log->info("{}: {} points, {} to run, {} at a time, {} threads each{}", s.name, s.points.size(), todo.size(),
            workers, threads, gpus.empty() ? "" : fmt::format(", GPUs {}", join(gpus, ",")));
  g_stop = false;
  auto old_int = std::signal(SIGINT, on_stop_signal);
  auto old_term = std::signal(SIGTERM, on_stop_signal);
  struct Slot {
    pid_t pid = 0;
    const Point* point = nullptr;
    std::chrono::steady_clock::time_point start;
  };
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
        if (sl.pid > 0) ::kill(sl.pid, SIGTERM);
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
            ++finished;
            if (status != 0) {
              ++failures;
              log->error("point {} failed (exit {}); log: {}", sl.point->name, status,
                         (fs::path(sl.point->run_dir) / "sweep.log").string());
            } else {
              finished_s += secs;
              ++succeeded;
              std::vector<double> running;
              for (const auto& other : slots) {
                if (other.pid > 0 && &other != &sl) {
                  running.push_back(std::chrono::duration<double>(now - other.start).count());
                }
              }
              const double eta = sweep_eta_seconds(finished_s / static_cast<double>(succeeded), running,
                                                   static_cast<int64_t>(todo.size() - next), workers);
              log->info("done {} in {:.0f}s [{}/{}] ETA {:.0f}s", sl.point->name, secs, finished, todo.size(),
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
        if (now_state != State::kDone && now_state != State::kRunning) break;
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
    if (!any && (stopping || next >= todo.size())) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  return failures;
}

// ---------------------------------------------------------------------------------------
// Slurm

std::string slurm_script(const Sweep& s, const std::vector<int64_t>& indices, const std::string& lengen) {
  LENGEN_CHECK(!indices.empty(), "nothing to submit: every point of {} is done or running", s.name);
  std::vector<std::string> ids;
  for (int64_t i : indices) ids.push_back(std::to_string(i));
  const fs::path logs = fs::path(s.dir) / "slurm";
  std::string out = "#!/bin/bash\n";
  out += fmt::format("# lengen sweep {} ({} of {} points); generated, do not edit\n", s.name, indices.size(),
                     s.points.size());
  out += fmt::format("#SBATCH --job-name=lengen-{}\n", sanitize(s.name));
  out += fmt::format("#SBATCH --array={}{}\n", join(ids, ","),
                     s.slurm.array_limit > 0 ? fmt::format("%{}", s.slurm.array_limit) : "");
  out += fmt::format("#SBATCH --output={}/%A_%a.out\n", logs.string());
  out += fmt::format("#SBATCH --error={}/%A_%a.err\n", logs.string());
  out += "#SBATCH --requeue\n#SBATCH --open-mode=append\n#SBATCH --signal=B:TERM@60\n";
  if (!s.slurm.partition.empty()) out += fmt::format("#SBATCH --partition={}\n", s.slurm.partition);
  if (!s.slurm.time.empty()) out += fmt::format("#SBATCH --time={}\n", s.slurm.time);
  if (!s.slurm.account.empty()) out += fmt::format("#SBATCH --account={}\n", s.slurm.account);
  if (!s.slurm.qos.empty()) out += fmt::format("#SBATCH --qos={}\n", s.slurm.qos);
  if (!s.slurm.mem.empty()) out += fmt::format("#SBATCH --mem={}\n", s.slurm.mem);
  if (s.slurm.cpus_per_task > 0) out += fmt::format("#SBATCH --cpus-per-task={}\n", s.slurm.cpus_per_task);
  if (s.slurm.gpus_per_task > 0) out += fmt::format("#SBATCH --gpus-per-task={}\n", s.slurm.gpus_per_task);
  for (const auto& line : s.slurm.extra) out += line + "\n";
  if (!s.slurm.setup.empty()) out += s.slurm.setup + "\n";
  // The point runs as a child of this shell so that the TERM Slurm sends before a time limit
  // reaches lengen, which checkpoints; a requeued task resumes from that checkpoint.
  out += fmt::format("'{}' sweep '{}' --point \"$SLURM_ARRAY_TASK_ID\" --job \"${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}\" &\n",
                     lengen, s.file);
  out += "child=$!\ntrap 'kill -TERM $child' TERM\nwait $child\nstatus=$?\nif [ $status -gt 128 ]; then wait $child; status=$?; fi\nexit $status\n";
  return out;
}

std::string submit_slurm(const Sweep& s, const std::string& script_path) {
  int status = 0;
  std::string out = capture(fmt::format("sbatch --parsable '{}'", script_path), &status);
  LENGEN_CHECK(status == 0, "sbatch failed (exit {}): {}", status, out);
  std::string job = out.substr(0, out.find_first_of(";\n"));
  LENGEN_CHECK(!job.empty() && std::all_of(job.begin(), job.end(), ::isdigit), "sbatch printed no job ID: {}",
               out);
  std::ofstream(fs::path(s.dir) / "slurm" / "jobs.txt", std::ios::app) << job << "\n";
  return job;
}

int64_t cancel_slurm(const Sweep& s) {
  const fs::path jobs = fs::path(s.dir) / "slurm" / "jobs.txt";
  LENGEN_CHECK(fs::exists(jobs), "{}: no Slurm jobs were submitted for this sweep", jobs.string());
  std::ifstream in(jobs);
  int64_t n = 0;
  for (std::string job; std::getline(in, job);) {
    if (job.empty()) continue;
    int status = 0;
    capture("scancel " + job, &status);
    if (status == 0) ++n;
  }
  return n;
}

// ---------------------------------------------------------------------------------------
// Aggregation

bool is_eval_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

std::string aggregate_dir(const std::string& sweep_dir, const std::string& eval_name) {
  const fs::path out = fs::path(sweep_dir) / "aggregate";
  return (eval_name.empty() ? out : out / "evals" / eval_name).string();
}

int64_t aggregate(const std::string& sweep_dir, double threshold, const std::string& eval_name) {
  const fs::path manifest_path = fs::path(sweep_dir) / "sweep.json";
  LENGEN_CHECK(fs::exists(manifest_path), "{}: not a sweep folder (no sweep.json; run `lengen sweep FILE` first)",
               sweep_dir);
  LENGEN_CHECK(eval_name.empty() || is_eval_name(eval_name),
               "aggregate --eval '{}': a name of RUN/evals/, not a path", eval_name);
  // Each point's evaluation: its run's own (eval/), or the one `lengen eval RUN --set ...`
  // wrote under evals/<name>/.
  const fs::path eval_rel = eval_name.empty() ? fs::path("eval") : fs::path("evals") / eval_name / "eval";
  json m = json::parse(read_text(manifest_path.string()));
  if (threshold < 0) threshold = m.value("threshold", 0.9);
  std::vector<std::string> axes = m["axes"].get<std::vector<std::string>>();
  std::vector<std::string> varied_keys;
  for (const auto& a : axes) {
    if (a != "seed") varied_keys.push_back(a);
  }
  std::vector<std::string> cell_axes;
  std::string results = "point,config,seed";
  for (const auto& k : varied_keys) results += "," + csv_field(k);
  bool header_done = false;
  // config -> cell key -> accuracies over seeds; config -> varied values; cell order.
  std::map<std::string, std::map<std::string, std::vector<double>>> acc;
  std::map<std::string, std::vector<std::string>> config_values;
  std::vector<std::string> config_order, cell_order;
  std::map<std::string, std::vector<int64_t>> cell_values;
  std::set<std::string> seen_points;
  json trained = json::object();  // the first point's trained ranges (plots outline them)
  int64_t read = 0;
  std::vector<std::string> missing;  // finished points without the named evaluation
  for (const auto& p : m["points"]) {
    const fs::path run_dir = fs::path(sweep_dir) / p["run_dir"].get<std::string>();
    const fs::path summary = run_dir / eval_rel / "summary.json";
    if (!fs::exists(summary)) {
      if (!eval_name.empty() && fs::exists(run_dir / "eval" / "summary.json")) missing.push_back(p["name"].get<std::string>());
      continue;
    }
    const std::string name = p["name"];
    LENGEN_CHECK(seen_points.insert(name).second, "point {} appears twice in {}", name, manifest_path.string());
    json sj = json::parse(read_text(summary.string()));
    if (!header_done) {
      cell_axes = sj["axes"].get<std::vector<std::string>>();
      trained = sj.value("trained", json::object());
      for (const auto& a : cell_axes) results += "," + a;
      results += ",samples,correct,accuracy,ci_low,ci_high\n";
      header_done = true;
    }
    const std::string config = p["config"];
    if (!acc.count(config)) {
      config_order.push_back(config);
      std::vector<std::string> vals;
      for (const auto& k : varied_keys) vals.push_back(p["varied"].value(k, std::string()));
      config_values[config] = vals;
    }
    std::string prefix = fmt::format("{},{},{}", csv_field(name), csv_field(config), p["seed"].get<int64_t>());
    for (const auto& k : varied_keys) prefix += "," + csv_field(p["varied"].value(k, std::string()));
    for (const auto& c : sj["cells"]) {
      std::vector<int64_t> coords;
      std::string key;
      for (const auto& a : cell_axes) {
        coords.push_back(c[a].get<int64_t>());
        key += (key.empty() ? "" : ",") + std::to_string(coords.back());
      }
      if (!cell_values.count(key)) {
        cell_order.push_back(key);
        cell_values[key] = coords;
      }
      const double a = c["accuracy"].get<double>();
      acc[config][key].push_back(a);
      results += fmt::format("{},{},{},{},{:.6f},{:.6f},{:.6f}\n", prefix, key, c["samples"].get<int64_t>(),
                             c["correct"].get<int64_t>(), a, c["ci95"][0].get<double>(), c["ci95"][1].get<double>());
    }
    ++read;
  }
  if (!eval_name.empty()) {
    LENGEN_CHECK(read > 0, "{}: no point has evals/{}/eval/summary.json; write it for each run with `lengen eval "
                 "RUN --out {} --set ...`", sweep_dir, eval_name, eval_name);
    if (!missing.empty()) {
      logger("sweep")->warn("{} finished point(s) have no evals/{} and are left out: {}", missing.size(), eval_name,
                            fmt::format("{}", fmt::join(missing, "; ")));
    }
  }
  const fs::path out = aggregate_dir(sweep_dir, eval_name);
  fs::create_directories(out);
  if (!header_done) {
    results += ",samples,correct,accuracy,ci_low,ci_high\n";
  }
  write_file_atomic((out / "results.csv").string(), results);
  std::string summary = "config";
  for (const auto& k : varied_keys) summary += "," + csv_field(k);
  for (const auto& a : cell_axes) summary += "," + a;
  summary += ",seeds,median,q25,q75,iqr,frac_above,min,max\n";
  for (const auto& config : config_order) {
    for (const auto& key : cell_order) {
      auto it = acc[config].find(key);
      if (it == acc[config].end()) continue;
      const auto& v = it->second;
      const double above = static_cast<double>(std::count_if(v.begin(), v.end(), [&](double x) {
                             return x >= threshold;
                           })) / static_cast<double>(v.size());
      std::string row = csv_field(config);
      for (const auto& val : config_values[config]) row += "," + csv_field(val);
      summary += fmt::format("{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f}\n", row, key, v.size(),
                             quantile(v, 0.5), quantile(v, 0.25), quantile(v, 0.75),
                             quantile(v, 0.75) - quantile(v, 0.25), above, *std::min_element(v.begin(), v.end()),
                             *std::max_element(v.begin(), v.end()));
    }
  }
  write_file_atomic((out / "summary.csv").string(), summary);
  if (m.contains("paper") && read > 0) {
    const PaperReference paper = PaperReference::from_json(m["paper"]);
    std::vector<ConfigFigures> figures;
    for (const auto& config : config_order) figures.push_back({config, acc[config]});
    report_paper(paper, compare_with_paper(paper, figures, cell_order), cell_axes, out.string(), "");
  }
  json meta{{"threshold", threshold}, {"cell_axes", cell_axes}, {"varied", varied_keys},
            {"configs", config_order}, {"trained", trained}, {"points_read", read}, {"points", m["points"].size()}};
  write_file_atomic((out / "aggregate.json").string(), meta.dump(2) + "\n");
  return read;
}

int64_t compare_runs(const std::vector<std::string>& run_dirs, const std::string& out_dir, double threshold) {
  LENGEN_CHECK(!run_dirs.empty(), "compare: no run directories given");
  json points = json::array();
  std::set<std::string> names;
  std::vector<std::string> first_axes;
  PaperReference paper;  // the runs' `paper:` blocks, a row per configuration that has one
  std::set<std::string> paper_configs;
  for (const auto& dir : run_dirs) {
    const fs::path run = fs::absolute(dir).lexically_normal();
    const fs::path config = run / "config.yaml", summary = run / "eval" / "summary.json";
    LENGEN_CHECK(fs::exists(config), "{}: not a run directory (no config.yaml)", dir);
    LENGEN_CHECK(fs::exists(summary), "{}: has not been evaluated (no eval/summary.json; run `lengen eval {}`)",
                 dir, dir);
    YAML::Node c = YAML::LoadFile(config.string());
    const std::string name = c["name"] ? c["name"].as<std::string>() : run.parent_path().filename().string();
    const int64_t seed = c["seed"] ? c["seed"].as<int64_t>() : 0;
    const auto axes = json::parse(read_text(summary.string()))["axes"].get<std::vector<std::string>>();
    if (first_axes.empty()) first_axes = axes;
    LENGEN_CHECK(axes == first_axes, "{}: evaluated over ({}) but {} over ({}); compare runs of one grid", dir,
                 fmt::format("{}", fmt::join(axes, ", ")), run_dirs.front(),
                 fmt::format("{}", fmt::join(first_axes, ", ")));
    if (c["paper"]) {
      const ConfigNode node = load_config_file(config.string()).child("paper");
      PaperReference theirs = PaperReference::from_config(node, axes, false);
      if (paper.empty()) {
        paper.cite = theirs.cite;
        paper.table = theirs.table;
        paper.note = theirs.note;
      }
      if (theirs.cite != paper.cite || theirs.table != paper.table) {
        logger("sweep")->warn("{}: its paper: block cites '{}, {}', the first run's '{}, {}'; only the first's "
                              "figures are compared", dir, theirs.cite, theirs.table, paper.cite, paper.table);
      } else if (paper_configs.insert(name).second) {
        PaperRow row = theirs.rows.front();
        row.label = row.label.empty() ? name : row.label;
        row.configs = {name};
        paper.rows.push_back(row);
      }
    }
    std::string point = fmt::format("{},seed={}", name, seed);
    LENGEN_CHECK(names.insert(point).second, "{}: a second run of '{}' with seed {}; give each run once", dir, name,
                 seed);
    points.push_back({{"index", points.size()},
                      {"name", point},
                      {"config", name},
                      {"seed", seed},
                      {"run_dir", run.string()},
                      {"varied", {{"run", name}}}});
  }
  json manifest{{"name", "compare"}, {"axes", {"run", "seed"}}, {"threshold", threshold}, {"points", points}};
  if (!paper.empty()) manifest["paper"] = paper.to_json();
  fs::create_directories(out_dir);
  write_file_atomic((fs::path(out_dir) / "sweep.json").string(), manifest.dump(2) + "\n");
  return aggregate(out_dir, threshold);
}

}  // namespace lengen::sweep
