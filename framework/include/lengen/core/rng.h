#pragma once

#include <cstdint>
#include <initializer_list>
#include <random>

namespace lengen {

/// Mixes a seed with stream labels (step number, grid cell, purpose tag) into one 64-bit
/// seed (splitmix64). Every random stream in lengen is derived this way from the experiment
/// seed, which makes training resumable at any step without saving generator state.
inline uint64_t mix_seed(uint64_t seed, std::initializer_list<uint64_t> labels) {
  auto splitmix = [](uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  };
  uint64_t h = splitmix(seed);
  for (uint64_t l : labels) {
    h = splitmix(h ^ splitmix(l + 0x632BE59BD9B4E019ull));
  }
  return h;
}

/// A small, portable random source for data generation. Unlike std distributions its
/// outputs do not depend on the standard library implementation.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  /// Uniform integer in [lo, hi] (inclusive), by rejection: exact and portable.
  int64_t uniform_int(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    if (span == 0) {
      return static_cast<int64_t>(engine_());  // full 64-bit range
    }
    const uint64_t limit = UINT64_MAX - UINT64_MAX % span;
    uint64_t x = engine_();
    while (x >= limit) {
      x = engine_();
    }
    return lo + static_cast<int64_t>(x % span);
  }

  /// Uniform double in [0, 1).
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  /// Fair coin.
  bool coin() { return (engine_() >> 63) != 0; }

  uint64_t next() { return engine_(); }

 private:
  std::mt19937_64 engine_;
};

}  // namespace lengen
