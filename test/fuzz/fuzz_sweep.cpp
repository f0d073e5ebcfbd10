// The sweep loader on any text (a sweep file whose `base:` may name the tiny experiment beside
// it); lines that begin "#set " are `--set` overrides.
#include "fuzz_common.h"

#include "lengen/sweep/sweep.h"

using namespace lengen;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::initialize();
  fuzz::write_file("base.yaml", fuzz::kTiny);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> sets = fuzz::sets_of(text);
  const std::string path = fuzz::write_file("sweep.yaml", text);
  try {
    // Planning validates each point (tens of ms under ASan): the cap keeps one input's cost
    // bounded; the cap itself has its unit test.
    sweep::Sweep s = sweep::load_sweep(path, sets, 64);
    (void)s;
  } catch (const lengen::Error&) {
  }
  return 0;
}
