#pragma once

#include "lengen/core/export.h"

#include <string>

namespace lengen {

/// Version of the framework library (semantic; the minor version tracks the plugin API).
inline constexpr const char* kVersion = "0.1.0";

/// Human-readable description of the LibTorch this binary was built against, e.g. "1.13.1".
LENGEN_API std::string torch_version();

/// What decides a CPU run's floating-point rounding besides the code: the processor
/// ("AMD EPYC, family 25 model 1"), the vector instructions LibTorch's kernels were dispatched
/// to ("AVX2") and the BLAS kernel set ("OpenBLAS 0.3.21 ... Zen"). Two machines that differ
/// here give bit-different trajectories from the same seed (docs/results.md, quickstart).
/// Recorded in every run's config.yaml (provenance.machine). Fields unknown here are "".
struct MachineInfo {
  std::string cpu, cpu_capability, blas;
};
LENGEN_API MachineInfo machine_info();

}  // namespace lengen
