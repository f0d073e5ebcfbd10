#include "lengen/core/version.h"

#include <ATen/Version.h>

#include <fstream>
#include <sstream>
#include <string>

#include <dlfcn.h>

namespace lengen {

namespace {

// "key : value" of the first processor in /proc/cpuinfo.
std::string cpuinfo_field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos || line.substr(0, colon).find_first_not_of(" \t", key.size()) != std::string::npos) {
      continue;
    }
    const auto start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return "";
}

}  // namespace

MachineInfo machine_info() {
  MachineInfo m;
  std::ifstream in("/proc/cpuinfo");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  m.cpu = cpuinfo_field(text, "model name");
  const std::string family = cpuinfo_field(text, "cpu family"), model = cpuinfo_field(text, "model");
  if (!family.empty()) m.cpu += (m.cpu.empty() ? "" : ", ") + std::string("family ") + family + " model " + model;
  // ATen prints the instruction set its CPU kernels dispatch to ("CPU capability usage: AVX2").
  std::istringstream config(at::show_config());
  for (std::string line; std::getline(config, line);) {
    const auto at = line.find("CPU capability usage:");
    if (at != std::string::npos) {
      m.cpu_capability = line.substr(line.find_first_not_of(' ', at + 21));
    }
  }
  // OpenBLAS picks its kernels by processor at load time (DYNAMIC_ARCH) and says which.
  using Text = char* (*)();
  if (auto config_fn = reinterpret_cast<Text>(::dlsym(RTLD_DEFAULT, "openblas_get_config"))) {
    m.blas = config_fn();
    if (auto core = reinterpret_cast<Text>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"))) {
      const std::string name = core();
      if (m.blas.find(name) == std::string::npos) m.blas += " " + name;
    }
  }
  return m;
}

}  // namespace lengen
