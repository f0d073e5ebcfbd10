// The TAOTP program reader (JSON or the book's Python-literal spelling) and the vocabulary
// reader on any text; a program that parses is counted and built into a model.
#include "fuzz_common.h"

#include "lengen/taotp/model.h"
#include "lengen/taotp/program.h"

using namespace lengen;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::initialize();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const taotp::Program p = taotp::parse_program(text, "<fuzz>");
    (void)taotp::count_parameters(p);
    (void)taotp::build_model(p);
  } catch (const lengen::Error&) {
  }
  try {
    (void)taotp::parse_vocabulary(text, "<fuzz>");
  } catch (const lengen::Error&) {
  }
  return 0;
}
