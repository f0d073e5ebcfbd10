// The experiment loader and its validation on any text: lines that begin "#set " are `--set`
// overrides, the rest is the experiment file (which may `extends:` the tiny base beside it).
#include "fuzz_common.h"

using namespace lengen;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::initialize();
  fuzz::write_file("base.yaml", fuzz::kTiny);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> sets = fuzz::sets_of(text);
  const std::string path = fuzz::write_file("exp.yaml", text);
  try {
    Experiment exp = Experiment::load(path, sets);
    (void)exp.resolved_yaml();
  } catch (const lengen::Error&) {
  }
  return 0;
}
