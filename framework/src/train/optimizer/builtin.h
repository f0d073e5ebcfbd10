#pragma once
// The built-in optimizers' registration functions, one per file in this folder; called from
// optimizer.cpp.
#include "lengen/train/optimizer.h"

namespace lengen {

/// `spec` with the option every optimizer has, `lr`, put first (what add_optimizer does).
ComponentSpec with_learning_rate(ComponentSpec spec);

/// Registers optimizer class T (static spec(), T(const Options&, const OptimizerContext&)).
template <class T>
void add_builtin_optimizer(OptimizerRegistry& r) {
  r.add(with_learning_rate(T::spec()),
        builtin_origin(),
        [](const Options& o, const OptimizerContext& c) -> std::shared_ptr<Optimizer> {
          return std::make_shared<T>(o, c);
        });
}

void register_adam(OptimizerRegistry& r);  // adam and adamw
void register_sgd(OptimizerRegistry& r);

}  // namespace lengen
