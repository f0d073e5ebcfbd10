// The checkpoint reader on any bytes: load_safetensors, then loading the tensors into a model
// (names, dtypes and shapes checked against it). Refusals must be lengen::Error.
#include "fuzz_common.h"

#include "lengen/train/checkpoint.h"
#include "lengen/train/weights.h"

using namespace lengen;

namespace {
Transformer* model = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::initialize();
  static Experiment exp = Experiment::load(fuzz::write_file("tiny.yaml", fuzz::kTiny));
  static Transformer m = exp.build_model(torch::kCPU);
  model = &m;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_file("input.safetensors", data, size);
  try {
    const TensorFile file = load_safetensors(path);
    load_weights(*model, file, path);
  } catch (const lengen::Error&) {
  }
  return 0;
}
