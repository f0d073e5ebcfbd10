#pragma once
// The learning rate's decay after the warm-up as a registered component
// (`train.schedule.decay: NAME`): cosine, linear, constant, one added in tree (a file under
// framework/src/train/schedule/, a line in schedule.cpp) or one a plugin registers
// (Registrar::add_decay). The schedule around it is the framework's: a linear warm-up from 0
// to the optimizer's `lr` over warmup_steps, then lr * (min_lr_ratio + (1 - min_lr_ratio) *
// shape(t)) with t the fraction of the remaining steps done. `lengen plugins` lists them; the
// schedule contract checks every one.

#include "lengen/core/export.h"
#include "lengen/registry/registry.h"

#include <cstdint>
#include <memory>
#include <string>

namespace lengen {

/// Decays take no context.
struct DecayContext {};

/// One registered decay: shape(0) = 1, shape(1) = 0 for one that decays fully, never
/// negative, never above 1.
class LENGEN_API Decay {
 public:
  virtual ~Decay();
  /// t in [0, 1]: the fraction of the steps after the warm-up done.
  virtual double shape(double t) const = 0;
};

/// Builds the registered decay `name`; an unknown name fails listing the registered ones,
/// at `where` (the YAML key) when given.
LENGEN_API std::shared_ptr<const Decay> make_decay(const std::string& name,
                                                   const ConfigNode& where = {});

/// The learning rate of a whole run: warm-up, then the decay.
struct LENGEN_API LearningRateSchedule {
  double lr = 1e-3;           ///< peak (the optimizer's `lr`)
  int64_t steps = 1000;       ///< all steps, warm-up included
  int64_t warmup_steps = 0;   ///< linear from lr / warmup_steps at step 0 to lr
  double min_lr_ratio = 0.0;  ///< the decay ends at lr * min_lr_ratio
  std::shared_ptr<const Decay> decay;

  /// Learning rate at (0-based) step.
  double at(int64_t step) const;
};

/// The learning-rate decays after the warm-up (`train.schedule.decay`), and the one a Decay
/// class registers in (Registrar::add_decay).
using DecayRegistry = Registry<Decay, DecayContext>;
LENGEN_API DecayRegistry& decay_registry();

inline DecayRegistry& registry_of(const Decay*) {
  return decay_registry();
}

}  // namespace lengen
