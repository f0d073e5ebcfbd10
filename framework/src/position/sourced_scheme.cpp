// SourcedPositionScheme: a scheme reading its positions from a PositionSource.
#include "lengen/position/sourced_scheme.h"

namespace lengen {

SourcedPositionScheme::SourcedPositionScheme(const Options& o, const SchemeContext& ctx)
    : source_(o, ctx) {}

SourcedPositionScheme::~SourcedPositionScheme() = default;

torch::Tensor SourcedPositionScheme::transform_ids(const torch::Tensor& ids,
                                                   int64_t offset,
                                                   bool /*training*/) {
  return source_.select(ids, offset, sequence_index());  // [1, B|1, T]
}

}  // namespace lengen
