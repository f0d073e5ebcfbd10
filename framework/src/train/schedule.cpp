// The decay registry with the built-in decays, and the warm-up-then-decay schedule.
#include "lengen/train/schedule.h"

#include "schedule/builtin.h"

#include "lengen/registry/reference.h"

#include <algorithm>

namespace lengen {

Decay::~Decay() = default;

DecayRegistry& decay_registry() {
  static DecayRegistry r("decay", "learning-rate decays", "train.schedule.decay");
  static const bool registered = [] {
    register_cosine_decay(r);
    register_linear_decay(r);
    register_constant_decay(r);
    return true;
  }();
  (void)registered;
  return r;
}

std::shared_ptr<const Decay> make_decay(const std::string& name, const ConfigNode& where) {
  if (where.defined()) {
    const Reference& r = read_reference(decay_registry(), where);
    return decay_registry().find(r.name)->make(r.options, DecayContext{});
  }
  return shared_referenced(decay_registry(), name, "train.schedule.decay");
}

double LearningRateSchedule::at(int64_t step) const {
  if (step < warmup_steps) {
    return lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  }
  const int64_t span = std::max<int64_t>(1, steps - warmup_steps);
  const double t =
      std::min(1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(span));
  return lr * (min_lr_ratio + (1.0 - min_lr_ratio) * decay->shape(t));
}

}  // namespace lengen
