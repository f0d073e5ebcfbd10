#pragma once

// What a plugin's source file includes: the ABI descriptor and the LENGEN_PLUGIN macro.
//
//   void register_coupling(lengen::Registrar& r) { r.add_position<Coupling>(); }
//   LENGEN_PLUGIN("coupling", "0.1.0", register_coupling)

#include "lengen/plugin/abi.h"
#include "lengen/registry/registry.h"

#include <torch/version.h>

#define LENGEN_PLUGIN_STRINGIFY2(x) #x
#define LENGEN_PLUGIN_STRINGIFY(x) LENGEN_PLUGIN_STRINGIFY2(x)

/// Defines the plugin's exported entry point. Use exactly once per plugin library.
#define LENGEN_PLUGIN(name, version, register_fn)                                         \
  extern "C" __attribute__((visibility("default"))) const lengen_plugin_descriptor*       \
  lengen_plugin_v1() {                                                                    \
    static const lengen_plugin_descriptor descriptor = {sizeof(lengen_plugin_descriptor), \
                                                        LENGEN_PLUGIN_ABI,                \
                                                        LENGEN_PLUGIN_API,                \
                                                        TORCH_VERSION_MAJOR,              \
                                                        TORCH_VERSION_MINOR,              \
                                                        _GLIBCXX_USE_CXX11_ABI,           \
                                                        name,                             \
                                                        version,                          \
                                                        "gcc " __VERSION__,               \
                                                        &register_fn};                    \
    return &descriptor;                                                                   \
  }
