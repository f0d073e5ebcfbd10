#pragma once

// The plugin ABI: the only C-level contract between liblengen and a plugin library.
//
// Each plugin exports exactly one symbol, `lengen_plugin_v1`, returning a descriptor. The
// loader checks the descriptor (size, ABI major equal, API minor <=, LibTorch major.minor
// and C++11 string ABI equal) BEFORE any C++ object crosses the boundary, then calls
// `register_components` with a Registrar bound to the library.
//
// Version semantics (OpenCV style):
//   LENGEN_PLUGIN_ABI  major; must be equal. Bumped on any incompatible change.
//   LENGEN_PLUGIN_API  minor; a plugin built against API n loads in any host with API >= n.
//
// API history: 0 first release; 1 adds the relative_values hook (kHookRelativeValues); 2 adds
// Options::get_int_range, Example::push and the header-only lengen/task/decimal.h (a task
// plugin using them needs a host with API >= 2); 3 adds stage components
// (Registrar::add_stage, lengen/stage/stage.h) and the analysis library; 4 adds
// Task::from_labeled and the evaluation breakdown (EvalConfig::breakdown, CellResult::analysis);
// 5 adds PositionScheme::position_ids (the shared `cyclic` transform), SchemeContext::run_dir,
// AttentionContext::query_offset and undefined additive biases (no term); 6 adds the shared
// `randomized` transform (PositionScheme::set_randomized); 7 adds optimizers and
// learning-rate decays as components (Registrar::add_optimizer, add_decay; lengen/train/
// optimizer.h, schedule.h) and makes norms and activations loadable (add_norm, add_activation);
// 8 adds PositionScheme::learned_tables and LearnedPositionTable; 9 adds architectures as
// components (Registrar::add_architecture; lengen/model/architecture.h); 10 adds packed rows
// (PositionScheme::position_ids' sequence_index, PositionSource::select's, the protected
// PositionScheme::sequence_index(), Batch and ModelInputs segments/sequence_index,
// make_packed_batch); 11 adds RunDir (lengen/core/run_dir.h: every path of a run folder),
// StageContext::folder(), open_run (lengen/stage/open_run.h) and ModelProbe
// (TransformerImpl::set_probe); 12 makes the plugin surface narrow and recorded
// (framework/plugin-surface.txt, scripts/check-surface.py): StageContext gives name(), file(),
// seed(), eval_seed(), model_config(), init_from(), fail() and build_model() in place of the
// experiment and the stage entry, which are no longer on the surface; Stage and StageInfo move
// to lengen/experiment/stage_kind.h, run_experiment and RunOptions to lengen/stage/run.h,
// run_plot to lengen/report/plot.h. From 12 on the API changes only when a surface header's
// code does.
// ABI history: 1 first release; 2 (architectures) adds the virtual functions
// PositionScheme::transform_ids_pair, Task::to_seq2seq and Task::to_labeled (vtables changed:
// rebuild every plugin); 3 (stages) adds fields to OptionSpec and Options (map and list-of-map
// options, shared with the framework's own config sections) and the stage registry; 4 adds
// the virtual Task::from_labeled (the inverse of to_labeled) and fields to EvalConfig and
// CellResult (rebuild every plugin); 5 adds fields to PositionScheme, SchemeContext,
// AttentionContext and Experiment (rebuild every plugin); 6 adds fields to PositionScheme
// (randomized positions) and ConfigSource (the files an experiment extends); 7 makes every
// Registry a RegistryBase (vtables changed), changes TrainConfig (the optimizer is a
// component), and adds Stage::trains/evaluates/reads_evaluations and their StageSpec fields
// (what the framework asked of a stage's kind name before): rebuild every plugin; 8 adds the
// virtual PositionScheme::learned_tables (the tables a scheme adds, found by what indexes them
// instead of by the scheme's name; vtable changed): rebuild every plugin; 9 makes the
// architecture a registered component (TransformerImpl::arch() returns the Architecture, which
// owns the layout, loss and decoding of the removed Objective; Batch moves to lengen/model/):
// rebuild every plugin; 10 adds fields to PositionScheme, Batch, ModelInputs and
// AttentionInputs (packed rows): rebuild every plugin; 11 changes write_grid_results to take
// the run's RunDir instead of its eval/ folder and adds fields to AttentionInputs and
// TransformerImpl (the probe): rebuild every plugin.

#include <cstdint>

#define LENGEN_PLUGIN_ABI 12
#define LENGEN_PLUGIN_API 12

namespace lengen {
class Registrar;
}

extern "C" {

/// What a plugin tells the loader about itself.
struct lengen_plugin_descriptor {
  uint32_t descriptor_size;    ///< sizeof(lengen_plugin_descriptor) at the plugin's build
  uint32_t abi_version;        ///< LENGEN_PLUGIN_ABI
  uint32_t api_version;        ///< LENGEN_PLUGIN_API
  uint32_t torch_major;        ///< TORCH_VERSION_MAJOR at build time
  uint32_t torch_minor;        ///< TORCH_VERSION_MINOR at build time
  uint32_t cxx11_abi;          ///< _GLIBCXX_USE_CXX11_ABI at build time
  const char* plugin_name;     ///< "coupling"
  const char* plugin_version;  ///< "0.1.0"
  const char* build_info;      ///< compiler and build type, for messages only
  void (*register_components)(lengen::Registrar&);  ///< explicit registration
};

/// The entry point's type.
typedef const lengen_plugin_descriptor* (*lengen_plugin_entry_fn)();
}

/// The name of the one exported symbol.
#define LENGEN_PLUGIN_ENTRY_SYMBOL "lengen_plugin_v1"
