#pragma once

// Helpers shared by the tests: building components through the registries (never through
// plugin symbols), temporary directories, tensor comparison with a useful message.

#include "catch_compat.h"

#include "lengen/config/node.h"
#include "lengen/position/scheme.h"
#include "lengen/registry/registry.h"
#include "lengen/task/task.h"
#include "lengen/train/checkpoint.h"

#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace lengen::test {

/// Builds a task from inline YAML, e.g. make_task("{name: addition, zero_pad: false}").
inline std::shared_ptr<Task> make_task(const std::string& yaml) {
  return task_registry().create(load_config_string(yaml, "<test>"), TaskContext{});
}

/// One level of an example's position IDs as "0 4 3 2 1 ...", for comparing with the papers.
inline std::string ids_string(const Example& e, size_t level = 0) {
  std::string s;
  for (int64_t v : e.position_ids.at(level)) {
    s += (s.empty() ? "" : " ") + std::to_string(v);
  }
  return s;
}

/// A small model's context for building a scheme alone: d_model 16, 2 heads of 8, 1 layer.
inline SchemeContext small_scheme_context(int64_t levels = 1) {
  SchemeContext c;
  c.d_model = 16;
  c.heads = 2;
  c.head_dim = 8;
  c.layers = 1;
  c.position_levels = levels;
  return c;
}

/// Builds a position scheme from inline YAML.
inline std::shared_ptr<PositionScheme> make_scheme(const std::string& yaml, SchemeContext ctx) {
  return position_registry().create(load_config_string(yaml, "<test>"), ctx);
}

/// Files a helper writes outside a TempDir, removed when the process that wrote them exits (a
/// forked child leaves its parent's files alone).
struct ProcessTempFiles {
  pid_t owner = ::getpid();
  std::set<std::string> paths;

  ~ProcessTempFiles() {
    if (::getpid() != owner) {
      return;
    }
    for (const auto& p : paths) {
      std::error_code ec;
      std::filesystem::remove(p, ec);
    }
  }
};

inline ProcessTempFiles& process_temp_files() {
  static ProcessTempFiles files;
  return files;
}

/// An ABC calibration file in the format the `calibrate` stage writes (docs/abc.md: per kind and
/// direction, "<kind>.<direction>.mean" and ".bias" [heads, lines], ".info" (m, n, anchor, 0),
/// ".stats" [heads, 4]) with random lines, about half of them kept, for `heads` heads: a 4 x 4
/// self map anchored left, a 4 x 6 cross map anchored left on the diagonal and right elsewhere.
/// Written here, not by the plugin's arithmetic, so that the contract tests need no plugin code.
inline std::string synthetic_calibration(int64_t heads) {
  const auto path =
      std::filesystem::temp_directory_path() / ("lengen-test-abc-" + std::to_string(heads) + "-" +
                                                std::to_string(::getpid()) + ".safetensors");
  torch::manual_seed(42);
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const std::string kind : {"self", "cross"}) {
    const int64_t m = 4, n = kind == "self" ? 4 : 6;
    for (const std::string direction : {"diagonal", "anti_diagonal", "vertical"}) {
      const int64_t lines = direction == "vertical" ? n : m + n - 1;
      const int64_t right = kind == "cross" && direction != "diagonal" ? 1 : 0;
      auto mean = torch::rand({heads, lines}, torch::kFloat64);
      auto kept = torch::rand({heads, lines}, torch::kFloat64) < 0.5;
      auto bias = torch::where(kept,
                               mean - std::get<0>(mean.max(1, true)),
                               torch::full_like(mean, -std::numeric_limits<double>::infinity()));
      const std::string name = kind + "." + direction;
      tensors.emplace_back(name + ".mean", mean);
      tensors.emplace_back(name + ".bias", bias);
      tensors.emplace_back(name + ".info", torch::tensor({m, n, right, int64_t{0}}, torch::kInt64));
      tensors.emplace_back(name + ".stats", torch::zeros({heads, 4}, torch::kFloat64));
    }
  }
  save_safetensors(path.string(), tensors);
  process_temp_files().paths.insert(path.string());
  return path.string();
}

/// A scheme's smallest YAML: its name plus a generous max_position where it has one, and a
/// synthetic calibration file for a scheme that reads one (`bias`, ABC; `heads` heads).
inline std::string scheme_yaml(const PositionRegistry::Entry& e, int64_t heads = 2) {
  std::string y = "{name: " + e.spec.name;
  for (const auto& o : e.spec.options) {
    if (o.key == "max_position") {
      y += ", max_position: 64";
    }
    if (o.key == "max_k") {
      y += ", max_k: 8";  // abacus: training offsets that fit the 64-row table
    }
    if (o.key == "bias") {
      y += ", bias: '" + synthetic_calibration(heads) + "'";
    }
  }
  return y + "}";
}

/// A fresh temporary directory, removed at scope exit.
struct TempDir {
  std::filesystem::path path;

  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() /
           ("lengen-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }

  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }

  std::string str() const { return path.string(); }

  std::string file(const std::string& name) const { return (path / name).string(); }
};

/// A tensor's elements, flattened, as a vector (T: its element type).
template <typename T>
std::vector<T> to_vector(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous().cpu();
  return std::vector<T>(c.data_ptr<T>(), c.data_ptr<T>() + c.numel());
}

/// Max absolute difference, for messages.
inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

/// A tiny addition experiment (1-layer decoder, NoPE, 10 steps): the base of the sweep and
/// paper tests, which plan runs without training them.
inline constexpr const char* kTinyAddition = R"(name: base
seed: 0
task: {name: addition, train_digits: [1, 3], eval_digits: [1, 4]}
model: {layers: 1, heads: 2, d_model: 16, d_ff: 32}
position: [nope]
train: {steps: 10, batch_size: 4}
eval: {samples: 5}
)";

/// The whole file as text ("" when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Writes text to a file.
inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

/// Runs a shell command, returning exit status and capturing stdout+stderr.
inline int run_command(const std::string& cmd, std::string* output) {
  std::string full = cmd + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  if (!p) {
    return -1;
  }
  char buf[4096];
  std::string out;
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) {
    out.append(buf, n);
  }
  int rc = pclose(p);
  if (output) {
    *output = out;
  }
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

#ifdef LENGEN_CLI
/// Runs the lengen CLI with `args` (stdout and stderr captured). Without `rc` the command
/// must succeed (its output is shown when it does not); with it, the exit status is stored.
inline std::string lengen_cli(const std::string& args, int* rc = nullptr) {
  std::string out;
  const int code = run_command(std::string(LENGEN_CLI) + " " + args, &out);
  if (rc) {
    *rc = code;
  } else {
    INFO(out);
    REQUIRE(code == 0);
  }
  return out;
}

/// lengen_cli under the short name the CLI tests use for it.
inline std::string sh(const std::string& args, int* rc = nullptr) {
  return lengen_cli(args, rc);
}
#endif

/// Starts `command` in the background and SIGKILLs it (as a node failure or the OOM killer
/// would) as soon as `dir` holds a file ending in `ext`; false when that never happened
/// within about a minute. `scratch` is a folder for the pid file.
inline bool kill_hard_when_file_appears(const std::string& command,
                                        const std::string& dir,
                                        const std::string& ext,
                                        const std::string& scratch) {
  const std::string pid_file = (std::filesystem::path(scratch) / "background.pid").string();
  std::system((command + " > /dev/null 2>&1 & echo $! > " + pid_file).c_str());
  std::string pid;
  std::ifstream(pid_file) >> pid;
  for (int i = 0; i < 1200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (e.path().extension() == ext) {
        std::system(("kill -9 " + pid).c_str());
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        return true;
      }
    }
  }
  return false;
}

}  // namespace lengen::test
