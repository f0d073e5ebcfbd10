// Contract of the training variation points, run over EVERY registered optimizer and
// learning-rate decay (built in and any found on the plugin path): what a new one must satisfy
// to be selected by `train.optimizer` / `train.schedule.decay`. The built-ins' formulas are
// checked against LibTorch's in test/unit/train/test_train.cpp.
#include "helpers.h"

#include "lengen/plugin/loader.h"
#include "lengen/train/optimizer.h"
#include "lengen/train/schedule.h"

using namespace lengen;

namespace {

using Named = std::vector<std::pair<std::string, torch::Tensor>>;

// Two parameters of different shapes and a third that never gets a gradient, float64.
struct Problem {
  torch::Tensor w, u, idle, target_w, target_u;

  explicit Problem(uint64_t seed) {
    torch::manual_seed(seed);
    w = torch::randn({4, 3}, torch::kFloat64).requires_grad_(true);
    u = torch::randn({5}, torch::kFloat64).requires_grad_(true);
    idle = torch::randn({2}, torch::kFloat64).requires_grad_(true);
    target_w = torch::randn({4, 3}, torch::kFloat64);
    target_u = torch::randn({5}, torch::kFloat64);
  }

  Named params() const { return {{"w", w}, {"idle", idle}, {"u", u}}; }

  torch::Tensor loss() const { return (w - target_w).pow(2).sum() + (u - target_u).pow(2).sum(); }

  void steps(Optimizer& opt, int n, double lr) const {
    for (int i = 0; i < n; ++i) {
      opt.zero_grad();
      loss().backward();
      opt.step(lr);
    }
  }
};

ConfigNode options(const std::string& name) {
  return load_config_string(fmt::format("{{name: {}}}", name), "contract");
}

}  // namespace

TEST_CASE("train contract: every registered optimizer", "[contract][train]") {
  load_all_plugins();
  REQUIRE(optimizer_registry().names().size() >= 3);
  for (const auto* entry : optimizer_registry().list()) {
    DYNAMIC_SECTION(entry->spec.name) {
      CHECK(entry->spec.kind == "optimizer");
      CHECK(!entry->spec.summary.empty());
      REQUIRE(!entry->spec.options.empty());
      CHECK(entry->spec.options.front().key == "lr");  // the framework's, first
      // With its default options it minimises a convex quadratic, and leaves a parameter
      // without a gradient exactly as it was.
      Problem p(7);
      const auto idle0 = p.idle.detach().clone();
      const double before = p.loss().item<double>();
      auto opt = make_optimizer(options(entry->spec.name), p.params());
      p.steps(*opt, 300, 0.02);
      CHECK(p.loss().item<double>() < before / 20);
      CHECK(torch::equal(p.idle, idle0));
      CHECK(opt->steps_taken() == 300);
      // Its state round-trips: 5 steps, a checkpoint of the state, 5 more from it in a fresh
      // optimizer over a copy of the weights, equal bit for bit to 10 uninterrupted steps.
      Problem a(3), b(3);
      auto straight = make_optimizer(options(entry->spec.name), a.params());
      auto first = make_optimizer(options(entry->spec.name), b.params());
      a.steps(*straight, 10, 0.02);
      b.steps(*first, 5, 0.02);
      Problem c(3);
      {
        torch::NoGradGuard g;
        c.w.copy_(b.w);
        c.u.copy_(b.u);
      }
      auto resumed = make_optimizer(options(entry->spec.name), c.params());
      resumed->load_state(first->state(), first->steps_taken());
      c.steps(*resumed, 5, 0.02);
      CHECK(torch::equal(a.w, c.w));
      CHECK(torch::equal(a.u, c.u));
      for (const auto& [name, t] : first->state()) {
        CHECK(name.rfind("optimizer.", 0) == 0);
      }
      // A state it lacks is refused, naming it.
      if (!first->state().empty()) {
        auto partial = first->state();
        partial.pop_back();
        CHECK_THROWS_WITH(resumed->load_state(partial, 5),
                          Catch::Contains("checkpoint has no optimizer state"));
      }
    }
  }
}

TEST_CASE("train contract: every registered learning-rate decay", "[contract][train]") {
  load_all_plugins();
  REQUIRE(decay_registry().names().size() >= 3);
  for (const auto* entry : decay_registry().list()) {
    DYNAMIC_SECTION(entry->spec.name) {
      CHECK(entry->spec.kind == "decay");
      CHECK(!entry->spec.summary.empty());
      auto d = make_decay(entry->spec.name);
      CHECK(d->shape(0.0) == 1.0);
      for (int i = 0; i <= 100; ++i) {
        const double v = d->shape(i / 100.0);
        CHECK(v >= 0.0);
        CHECK(v <= 1.0);
        CHECK(v == make_decay(entry->spec.name)->shape(i / 100.0));  // deterministic
      }
      // In a schedule: the warm-up rises linearly to the peak, and the last step keeps at
      // least min_lr_ratio of it.
      LearningRateSchedule s{0.1, 100, 10, 0.25, d};
      CHECK(s.at(0) == Approx(0.01));
      CHECK(s.at(9) == Approx(0.1));
      CHECK(s.at(10) == Approx(0.1));
      CHECK(s.at(99) >= 0.025 - 1e-12);
    }
  }
}
