#pragma once

// How many threads a run uses and how the process is prepared for training
// (src/experiment/threads.cpp).

#include "lengen/core/export.h"

#include <cstdint>

namespace lengen {

/// The cores this process may run on: its CPU affinity mask (what `taskset`, Slurm's cpusets
/// and container limits leave it), else the hardware concurrency; at least 1.
LENGEN_API int64_t usable_cores();

/// The thread count `threads: 0` stands for: OMP_NUM_THREADS where it is set to a positive
/// count (the first entry of a list), else usable_cores().
LENGEN_API int64_t default_threads();

/// Prepares the process for training: LibTorch's intra-op thread count (`threads` > 0, else
/// default_threads()) and allocator settings that keep per-step activation buffers on
/// the heap instead of mmap'ing them afresh each step. Returns the thread count.
LENGEN_API int64_t configure_threads(int64_t threads);

}  // namespace lengen
