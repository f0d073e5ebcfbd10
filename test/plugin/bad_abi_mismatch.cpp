// A plugin that claims a future ABI: the loader must refuse it before registering anything.
#include "lengen/plugin/plugin.h"

namespace {
void register_nothing(lengen::Registrar&) {}
}  // namespace

extern "C" __attribute__((visibility("default"))) const lengen_plugin_descriptor*
lengen_plugin_v1() {
  static const lengen_plugin_descriptor d = {sizeof(lengen_plugin_descriptor),
                                             LENGEN_PLUGIN_ABI + 41,
                                             LENGEN_PLUGIN_API,
                                             TORCH_VERSION_MAJOR,
                                             TORCH_VERSION_MINOR,
                                             _GLIBCXX_USE_CXX11_ABI,
                                             "bad_abi",
                                             "0.0.1",
                                             "test",
                                             &register_nothing};
  return &d;
}
