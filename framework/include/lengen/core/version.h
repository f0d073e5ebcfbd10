#pragma once

#include "lengen/core/export.h"

#include <string>

namespace lengen {

/// Version of the framework (semantic): the minor version is the plugin API
/// (LENGEN_PLUGIN_API, lengen/plugin/abi.h), so a plugin built against lengen 0.N loads in any
/// lengen 0.M with M >= N and the same ABI. CHANGELOG.md says what each version changed.
/// `lengen --version` prints it with the plugin API and ABI. Kept equal to CMakeLists.txt's
/// project(VERSION) by a check at configure time.
inline constexpr const char* kVersion = "0.12.0";

/// Where this binary's code came from, recorded in every run's config.yaml
/// (provenance.source_tree). In a build tree inside a git checkout: the commit and whether
/// tracked files differ from it (`git describe --always --dirty`, asked once per process, so a
/// rebuild after an edit is seen); for an installed tree outside git: the version alone (commit
/// "").
struct SourceInfo {
  std::string version, commit;
  bool dirty = false;
};

LENGEN_API SourceInfo source_info();

/// Human-readable description of the LibTorch this binary was built against, e.g. "1.13.1".
LENGEN_API std::string torch_version();

/// What decides a CPU run's floating-point rounding besides the code: the processor
/// ("AMD EPYC, family 25 model 1"), the vector instructions LibTorch's kernels were dispatched
/// to ("AVX2") and the BLAS kernel set ("OpenBLAS 0.3.21 ... Zen"). Two machines that differ
/// here give bit-different trajectories from the same seed (docs/results.md, quickstart).
/// Recorded in every run's config.yaml (provenance.machine). Fields unknown here are "".
struct MachineInfo {
  std::string cpu, cpu_capability, blas;
  /// The kernel family the figures depend on, in the words docs/results.md uses: "AVX-512"
  /// (OpenBLAS SkylakeX / Cooperlake / SapphireRapids), "AVX2" (Haswell, Zen), or the BLAS's
  /// own core name for anything else; "" when the BLAS is not OpenBLAS.
  std::string kernel_set;
};

LENGEN_API MachineInfo machine_info();

/// OpenBLAS (built with DYNAMIC_ARCH, as Debian's is) picks its kernels by processor model
/// when the library loads. A model newer than the OpenBLAS release gets the generic Prescott
/// (SSE3) kernels: Debian 12's 0.3.21 does that on Sapphire/Emerald Rapids Xeons (family 6
/// model 207), where lengen's matmuls then run at half the speed of the AVX-512 ones. When
/// that happened and the processor has AVX2 + FMA (or AVX-512 F/BW/CD/DQ/VL), this sets
/// OPENBLAS_CORETYPE to Haswell (or SkylakeX) and re-executes the program with the same
/// arguments: the choice is made at load time and cannot be changed in the process. It
/// returns (doing nothing) when OPENBLAS_CORETYPE is already set, when the BLAS is not
/// OpenBLAS or chose AVX2 kernels or better, when LENGEN_BLAS_AUTO=0, or when exec fails.
/// Call it first thing in main(); provenance.machine.blas then names the kernels used.
LENGEN_API void use_native_blas_kernels(char** argv);

}  // namespace lengen
