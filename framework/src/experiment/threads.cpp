// The threads and allocator settings a run starts with (lengen/experiment/threads.h).
#include "lengen/experiment/threads.h"

#include "lengen/core/log.h"
#include "lengen/core/parse.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef __linux__
#include <sched.h>
#endif

namespace lengen {

int64_t usable_cores() {
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) {
      return n;
    }
  }
#endif
  return std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()));
}

int64_t configure_threads(int64_t threads) {
#ifdef __GLIBC__
  // Training allocates and frees the same large activation buffers every step. Past glibc's
  // default mmap threshold each of those is an mmap/munmap pair plus page faults (measured: a
  // third of the quickstart's step time was system time). Keep them on the heap instead.
  static const bool tuned = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    return true;
  }();
  (void)tuned;
#endif
  const int64_t n = threads > 0 ? threads : default_threads();
  torch::set_num_threads(static_cast<int>(n));
  return n;
}

int64_t default_threads() {
  // OMP_NUM_THREADS as OpenMP reads it: a positive count, or a list whose first entry is the
  // outer level's ("4,2"). Anything else is ignored with a warning.
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (env != nullptr && *env != '\0') {
    const std::string text(env);
    const auto n = leading_integer(text);
    if (n && n->value > 0 && (n->used == text.size() || text[n->used] == ',')) {
      return n->value;
    }
    logger("threads")->warn(
        "OMP_NUM_THREADS=\"{}\" is not a positive thread count; using the {} "
        "usable cores",
        text,
        usable_cores());
  }
  return usable_cores();
}

}  // namespace lengen
