#pragma once

// The base of schemes that read one position per token from a PositionSource.

#include "lengen/position/scheme.h"
#include "lengen/position/source.h"

namespace lengen {

/// Base for schemes that read one position per token from a PositionSource: it holds the
/// source (declare PositionSource::options() in the spec) and implements transform_ids.
class LENGEN_API SourcedPositionScheme : public PositionScheme {
 public:
  SourcedPositionScheme(const Options& o, const SchemeContext& ctx);
  ~SourcedPositionScheme() override;
  /// ids [L, B, T] -> the selected positions [1, B|1, T].
  torch::Tensor transform_ids(const torch::Tensor& ids, int64_t offset, bool training) override;

 protected:
  PositionSource source_;
};

}  // namespace lengen
