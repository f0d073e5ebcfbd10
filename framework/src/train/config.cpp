// The `train:` section: TrainConfig's schema, reading, writing and learning-rate schedule.
#include "lengen/train/config.h"

#include "lengen/config/section.h"
#include "lengen/core/error.h"
#include "lengen/train/optimizer.h"

namespace lengen {

namespace {

// The optimizer's node as written and its options, validated here once (the decay, a
// component reference, is checked when the section is read).
void read_optimizer(TrainConfig& c, const Options& train) {
  c.optimizer = train.node("optimizer");
  c.optimizer_options = optimizer_options(c.optimizer);
  c.lr = c.optimizer_options.get_float("lr");
}

// The optimizer's name and every option, defaults filled in (the run's config.yaml).
YAML::Node optimizer_yaml(const TrainConfig& c) {
  YAML::Node out(YAML::NodeType::Map);
  const std::string name = optimizer_name(c.optimizer);
  out["name"] = name;
  const auto& entry = optimizer_registry().lookup(name, c.optimizer);
  const Options& o = c.optimizer_options;
  // Numbers are written from their values, as the section's own keys are ("0.003" and "3e-3"
  // resolve alike), so a resolved file does not depend on how the YAML spelled them.
  const YAML::Node as_written = o.to_yaml();
  for (const auto& opt : entry.spec.options) {
    switch (opt.type) {
      case OptionType::kFloat:
        out[opt.key] = o.get_float(opt.key);
        break;
      case OptionType::kInt:
        out[opt.key] = o.get_int(opt.key);
        break;
      case OptionType::kBool:
        out[opt.key] = o.get_bool(opt.key);
        break;
      default:
        if (as_written[opt.key])
          out[opt.key] = as_written[opt.key];
    }
  }
  return out;
}

const Section<TrainConfig>& train_section() {
  using O = OptionSpec;
  using C = TrainConfig;
  static const Section<TrainConfig> s =
      Section<TrainConfig>(
          "train", "optimisation: steps, batch, optimizer, schedule, data, logging, checkpoints")
          .field(&C::steps, O::integer("steps", "optimisation steps").at_least(1))
          .field(&C::batch_size, O::integer("batch_size", "sequences per step").at_least(1))
          .field(
              &C::buckets,
              O::integer("buckets",
                         "split each step's batch by length into up to N groups, each padded "
                         "only to its own longest sample (less compute on padding); the loss and "
                         "gradients are the whole batch's. 1: one padded batch")
                  .at_least(1))
          .field(&C::pack,
                 O::boolean(
                     "pack",
                     "pack each step's samples into rows as long as its longest sample "
                     "(first fit by decreasing length), each position attending only to its own "
                     "sample (a block-diagonal causal mask) with its own position IDs and sequence "
                     "index; the loss and gradients are the unpacked batch's, less compute on "
                     "padding. Random offsets are drawn per row. Decoder architecture, buckets: 1, "
                     "no cuda_graphs"))
          .option(
              O::map("optimizer",
                     "a registered optimizer (\"Optimizers\" below) and its options: {name: adamw, "
                     "lr: 3e-4, weight_decay: 0.01}; default adam")
                  .any_keys()
                  .scalar_means("name"),
              read_optimizer,
              optimizer_yaml)
          .option(O::map("schedule", "linear warm-up from 0, then decay to lr * min_lr_ratio"))
          .field("schedule",
                 &C::warmup_steps,
                 O::integer("warmup_steps", "warm-up steps (or warmup_fraction, not both)")
                     .may_be_absent()
                     .at_least(0))
          .option("schedule",
                  O::number("warmup_fraction", "warm-up as a fraction of steps")
                      .may_be_absent()
                      .at_least(0)
                      .at_most(1))
          .field("schedule",
                 &C::decay,
                 O::component("decay",
                              "a registered decay after the warm-up (\"Learning-rate decays\" "
                              "below)",
                              decay_registry().kind()))
          .field("schedule",
                 &C::min_lr_ratio,
                 O::number("min_lr_ratio", "final lr = lr * min_lr_ratio").at_least(0).at_most(1))
          .field(&C::grad_clip,
                 O::number("grad_clip", "global L2 norm of the gradients; 0 disables").at_least(0))
          .field(&C::label_smoothing,
                 O::number("label_smoothing",
                           "cross-entropy against (1 - e) * one-hot + e / V (Szegedy et al. "
                           "2016), which bounds how far a logit margin is pushed; the logged loss "
                           "is this one. "
                           "0: plain cross-entropy")
                     .at_least(0)
                     .at_most(0.5))
          .field(&C::dataset_size,
                 O::integer("dataset_size",
                            "0: a fresh sample every step; N: a fixed training set of N examples, "
                            "visited in seeded epochs (with task.mixture each source has its own)")
                     .at_least(0))
          .field(&C::log_every,
                 O::integer("log_every",
                            "progress line and metrics.jsonl record period; a non-finite "
                            "loss is reported at the next one (or evaluation, checkpoint)")
                     .at_least(1))
          .field(&C::checkpoint_every,
                 O::integer("checkpoint_every", "0: only the final checkpoint").at_least(0))
          .field(&C::keep_checkpoints, O::integer("keep_checkpoints", "newest N kept").at_least(1))
          .field(&C::eval_every,
                 O::integer("eval_every",
                            "evaluate every N steps (and at step 0 and the last) into "
                            "eval_curve.jsonl; 0: never")
                     .at_least(0))
          .option(O::map("eval_grid",
                         "eval: keys laid over eval: for those evaluations, e.g. {samples: 100}")
                      .any_keys())
          .field(
              &C::cuda_graphs,
              O::boolean("cuda_graphs",
                         "on CUDA, capture the whole training step (forward, backward, clipping, "
                         "the fused Adam update) once per padded batch shape and replay it, one "
                         "launch a step "
                         "instead of hundreds; lengths are padded up to graph_length_multiple (the "
                         "loss is "
                         "unchanged: padding is masked and after every real token). Decoder "
                         "layout, buckets: 1. "
                         "On the CPU the same padded step runs eagerly"))
          .field(&C::graph_length_multiple,
                 O::integer("graph_length_multiple",
                            "with cuda_graphs: pad each step's length up to a multiple of N "
                            "(fewer shapes to capture, more padding)")
                     .at_least(1));
  return s;
}

}  // namespace

Options TrainConfig::default_optimizer_options() {
  return lengen::optimizer_options(ConfigNode());
}

ComponentSpec TrainConfig::schema() {
  return train_section().spec();
}

TrainConfig TrainConfig::from_config(const ConfigNode& node) {
  TrainConfig c;
  Options o = train_section().read(node, c);
  Options sched = o.get_map("schedule");
  if (sched.given("warmup_fraction")) {
    if (sched.given("warmup_steps")) {
      sched.fail("warmup_steps", "give either warmup_steps or warmup_fraction, not both");
    }
    c.warmup_steps = static_cast<int64_t>(
        std::llround(sched.get_float("warmup_fraction") * static_cast<double>(c.steps)));
  }
  c.eval_grid = o.node("eval_grid");
  auto require = [&](bool ok, const char* key, const std::string& msg) {
    if (!ok) {
      ConfigNode n = node.child(key);
      (n.defined() ? n : node).fail(msg);
    }
  };
  require(c.lr > 0, "optimizer", fmt::format("train.optimizer.lr must be > 0, got {}", c.lr));
  require(c.warmup_steps >= 0 && c.warmup_steps <= c.steps,
          "schedule",
          fmt::format("warm-up of {} steps does not fit in {} steps", c.warmup_steps, c.steps));
  require(c.eval_every > 0 || !c.eval_grid.defined(),
          "eval_grid",
          "train.eval_grid is used only with train.eval_every > 0");
  require(
      !c.cuda_graphs || c.buckets == 1,
      "cuda_graphs",
      fmt::format("train.cuda_graphs replays one padded shape per step and needs buckets: 1, got "
                  "buckets: {}",
                  c.buckets));
  require(!c.pack || c.buckets == 1,
          "pack",
          fmt::format(
              "train.pack fills rows from the whole batch and needs buckets: 1, got buckets: {}",
              c.buckets));
  require(!c.pack || !c.cuda_graphs,
          "pack",
          "train.pack and train.cuda_graphs do not combine: a graph replays one padded shape, and "
          "packing changes the number of rows every step; choose one");
  return c;
}

YAML::Node TrainConfig::to_yaml() const {
  YAML::Node n = train_section().write(*this);
  if (eval_grid.defined())
    n["eval_grid"] = YAML::Clone(eval_grid.yaml());
  return n;
}

LearningRateSchedule TrainConfig::schedule() const {
  return LearningRateSchedule{lr, steps, warmup_steps, min_lr_ratio, make_decay(decay)};
}

double TrainConfig::lr_at(int64_t step) const {
  return schedule().at(step);
}

}  // namespace lengen
