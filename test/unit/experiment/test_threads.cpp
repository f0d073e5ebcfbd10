// Thread settings: the default count (affinity mask, OMP_NUM_THREADS) and `threads:`.
#include "helpers.h"

#include "lengen/experiment/threads.h"

#include <torch/torch.h>

#include <cstdlib>
#include <string>

#ifdef __linux__
#include <sched.h>
#endif

using namespace lengen;

TEST_CASE("threads: the default thread count is the CPUs the affinity mask allows", "[train]") {
#ifdef __linux__
  // `taskset -c 0 lengen run` or a Slurm cpuset must give one thread per allowed CPU, not
  // one per CPU of the machine.
  cpu_set_t old;
  REQUIRE(sched_getaffinity(0, sizeof(old), &old) == 0);
  CHECK(usable_cores() == CPU_COUNT(&old));
  int first = 0;
  while (!CPU_ISSET(first, &old))
    ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  REQUIRE(sched_setaffinity(0, sizeof(one), &one) == 0);
  const int64_t pinned = usable_cores();
  REQUIRE(sched_setaffinity(0, sizeof(old), &old) == 0);
  CHECK(pinned == 1);
#endif
  CHECK(usable_cores() >= 1);
}

TEST_CASE("threads: OMP_NUM_THREADS sets the default thread count; threads: N overrides it",
          "[train]") {
  // What the environment says is restored afterwards, whatever the checks find.
  const char* before = std::getenv("OMP_NUM_THREADS");
  const std::string saved = before != nullptr ? before : "";
  const int torch_threads = torch::get_num_threads();

  struct Restore {
    bool had;
    std::string value;
    int threads;

    ~Restore() {
      if (had) {
        ::setenv("OMP_NUM_THREADS", value.c_str(), 1);
      } else {
        ::unsetenv("OMP_NUM_THREADS");
      }
      torch::set_num_threads(threads);
    }
  } restore{before != nullptr, saved, torch_threads};

  ::unsetenv("OMP_NUM_THREADS");
  CHECK(default_threads() == usable_cores());
  ::setenv("OMP_NUM_THREADS", "3", 1);
  CHECK(default_threads() == 3);
  CHECK(configure_threads(0) == 3);
  CHECK(torch::get_num_threads() == 3);
  CHECK(configure_threads(1) == 1);  // an explicit `threads:` wins
  CHECK(torch::get_num_threads() == 1);
  ::setenv("OMP_NUM_THREADS", "2,1", 1);  // nested levels: the outer one
  CHECK(default_threads() == 2);
  for (const char* bad : {"0", "-2", "four", "2x", ""}) {
    INFO("OMP_NUM_THREADS=" << bad);
    ::setenv("OMP_NUM_THREADS", bad, 1);
    CHECK(default_threads() == usable_cores());
  }
}
