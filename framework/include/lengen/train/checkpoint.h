#pragma once

#include "lengen/core/export.h"

#include <torch/types.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lengen {

/// Tensors and string metadata of one safetensors file.
struct LENGEN_API TensorFile {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;  ///< in file order
  std::map<std::string, std::string> metadata;
  const torch::Tensor* find(const std::string& name) const;
};

/// Writes a safetensors file (8-byte little-endian header length, JSON header with
/// dtype/shape/data_offsets and __metadata__, raw little-endian data) atomically: written to
/// "<path>.tmp-<pid>", flushed with fsync, then renamed over `path`. A failure (disk full,
/// permission) throws lengen::Error naming the path and leaves any previous file intact.
LENGEN_API void save_safetensors(const std::string& path,
                                 const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                 const std::map<std::string, std::string>& metadata = {});

/// Reads a safetensors file; errors name the path and what is malformed.
LENGEN_API TensorFile load_safetensors(const std::string& path);

/// The training step a checkpoint was written at (its "step" metadata). Fails naming `path`
/// when the file has none ("not a lengen training checkpoint") or it is not a step count.
LENGEN_API int64_t training_step_of(const TensorFile& file, const std::string& path);

}  // namespace lengen
