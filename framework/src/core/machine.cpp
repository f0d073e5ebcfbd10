#include "lengen/core/version.h"

#include <ATen/Version.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace lengen {

namespace {

// "key : value" of the first processor in /proc/cpuinfo.
std::string cpuinfo_field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0)
      continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos ||
        line.substr(0, colon).find_first_not_of(" \t", key.size()) != std::string::npos) {
      continue;
    }
    const auto start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return "";
}

using Text = char* (*)();

// OpenBLAS's name for the kernel set it loaded ("Haswell"), or "" when the BLAS is not OpenBLAS.
std::string openblas_core() {
  auto core = reinterpret_cast<Text>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  return core ? std::string(core()) : std::string();
}

}  // namespace

void use_native_blas_kernels(char** argv) {
  const char* opt_out = std::getenv("LENGEN_BLAS_AUTO");
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr ||
      (opt_out != nullptr && std::string(opt_out) == "0"))
    return;
  const std::string core = openblas_core();
  if (core.empty())
    return;
  std::string lower = core;
  std::transform(
      lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  // The kernel sets of 0.3.x that use AVX2 or wider; anything else on an AVX2 machine is a
  // fallback.
  for (const char* good : {"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"}) {
    if (lower == good)
      return;
  }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  const char* wanted = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl")) {
    wanted = "SkylakeX";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    wanted = "Haswell";
  }
  if (wanted == nullptr || argv == nullptr || argv[0] == nullptr)
    return;
  ::setenv("OPENBLAS_CORETYPE", wanted, 1);
  ::setenv("LENGEN_BLAS_FALLBACK", core.c_str(), 1);  // provenance: what OpenBLAS had chosen
  ::execv("/proc/self/exe", argv);
  ::unsetenv("OPENBLAS_CORETYPE");  // exec failed: carry on with the kernels loaded
  ::unsetenv("LENGEN_BLAS_FALLBACK");
#endif
}

namespace {

MachineInfo read_machine_info() {
  MachineInfo m;
  std::ifstream in("/proc/cpuinfo");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  m.cpu = cpuinfo_field(text, "model name");
  const std::string family = cpuinfo_field(text, "cpu family"),
                    model = cpuinfo_field(text, "model");
  if (!family.empty())
    m.cpu += (m.cpu.empty() ? "" : ", ") + std::string("family ") + family + " model " + model;
  // ATen prints the instruction set its CPU kernels dispatch to ("CPU capability usage: AVX2").
  std::istringstream config(at::show_config());
  for (std::string line; std::getline(config, line);) {
    const auto at = line.find("CPU capability usage:");
    if (at != std::string::npos) {
      m.cpu_capability = line.substr(line.find_first_not_of(' ', at + 21));
    }
  }
  // OpenBLAS picks its kernels by processor at load time (DYNAMIC_ARCH) and says which.
  if (auto config_fn = reinterpret_cast<Text>(::dlsym(RTLD_DEFAULT, "openblas_get_config"))) {
    m.blas = config_fn();
    const std::string name = openblas_core();
    if (!name.empty() && m.blas.find(name) == std::string::npos)
      m.blas += " " + name;
    std::string lower = name;
    std::transform(
        lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    m.kernel_set = lower == "skylakex" || lower == "cooperlake" || lower == "sapphirerapids"
                       ? "AVX-512"
                   : lower == "haswell" || lower == "zen" ? "AVX2"
                                                          : name;
    if (const char* forced = std::getenv("OPENBLAS_CORETYPE")) {
      const char* fallback = std::getenv("LENGEN_BLAS_FALLBACK");
      m.blas += std::string(" (OPENBLAS_CORETYPE=") + forced +
                (fallback ? std::string(", set by lengen: OpenBLAS had chosen ") + fallback
                          : std::string()) +
                ")";
    }
  }
  return m;
}

}  // namespace

// The processor and kernels do not change while a process runs; a sweep plans thousands of
// points, each recording them.
MachineInfo machine_info() {
  static const MachineInfo info = read_machine_info();
  return info;
}

namespace {

// The first line a shell command prints, "" when it fails.
std::string first_line_of(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr)
    return "";
  char buf[256];
  std::string out;
  if (std::fgets(buf, sizeof buf, pipe) != nullptr)
    out = buf;
  const int rc = ::pclose(pipe);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r'))
    out.pop_back();
  return rc == 0 ? out : std::string();
}

SourceInfo read_source_info() {
  SourceInfo s;
  s.version = kVersion;
#ifdef LENGEN_SOURCE_DIR
  // Only a binary that lives in the source tree it was built from (a build folder) asks git: an
  // installed copy may sit beside a checkout of other code.
  std::error_code ec;
  const std::string exe = std::filesystem::canonical("/proc/self/exe", ec).string();
  const std::string src = std::filesystem::weakly_canonical(LENGEN_SOURCE_DIR, ec).string();
  if (ec || src.empty() || exe.rfind(src + "/", 0) != 0)
    return s;
  const std::string quoted = "'" + src + "'";  // CMake's source path: no quote inside
  const std::string described = first_line_of(
      "git -C " + quoted + " describe --always --dirty --abbrev=40 --match='' 2>/dev/null");
  if (described.empty())
    return s;
  s.dirty = described.size() > 6 && described.compare(described.size() - 6, 6, "-dirty") == 0;
  s.commit = s.dirty ? described.substr(0, described.size() - 6) : described;
#endif
  return s;
}

}  // namespace

// Asked once per process (a git call costs ~10 ms; a sweep plans thousands of points): a
// rebuild after an edit is a new process and sees the edit.
SourceInfo source_info() {
  static const SourceInfo info = read_source_info();
  return info;
}

}  // namespace lengen
