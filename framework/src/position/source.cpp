// PositionSource: the sequence index or one level of the task's IDs.
#include "lengen/position/source.h"

#include "lengen/core/error.h"

namespace lengen {

std::vector<OptionSpec> PositionSource::options() {
  return {OptionSpec::string("ids", "index: sequence index 0..T-1; task: the task's IDs")
              .with_default("index")
              .one_of({"index", "task"}),
          OptionSpec::integer("level", "which level of the task's IDs (ids: task)")
              .with_default(0)
              .at_least(0)};
}

PositionSource::PositionSource(const Options& o, const SchemeContext& ctx)
    : index_(o.get_string("ids") == "index"), level_(o.get_int("level")) {
  if (!index_ && level_ >= ctx.position_levels) {
    o.fail("level",
           fmt::format("the task emits {} level(s) of IDs; level {} does not exist",
                       ctx.position_levels,
                       level_));
  }
}

torch::Tensor PositionSource::select(const torch::Tensor& ids,
                                     int64_t offset,
                                     const torch::Tensor& sequence_index) const {
  if (!index_) {
    return ids.slice(0, level_, level_ + 1);  // [1, B, T]
  }
  if (sequence_index.defined()) {
    return sequence_index.unsqueeze(0);  // [1, B, T]: each token's index in its own sample
  }
  // The same for every sample: batch dimension 1, broadcast by every hook.
  return torch::arange(offset, offset + ids.size(2), ids.options()).view({1, 1, -1});  // [1, 1, T]
}

}  // namespace lengen
