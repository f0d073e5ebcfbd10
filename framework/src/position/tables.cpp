// PositionTables: learned tables per level of IDs, and their random offsets.
#include "lengen/position/tables.h"

#include "lengen/core/error.h"
#include "lengen/position/sinusoidal.h"

namespace lengen {

std::vector<OptionSpec> PositionTables::init_options(const std::string& default_init) {
  return {
      OptionSpec::string("init", "table initialisation")
          .with_default(default_init)
          .one_of({"normal", "sinusoidal"}),
      OptionSpec::number("init_std", "std of the normal initialisation")
          .with_default(1.0)
          .at_least(0),
      OptionSpec::number("init_scale", "scale of the sinusoidal initialisation").with_default(1.0),
      OptionSpec::number("init_base",
                         "frequency base of the sinusoidal initialisation, w_i = base^(-2i/d); "
                         "for a short table about (max_position + 1) / pi, so that the "
                         "slowest column makes half a turn over the table")
          .with_default(10000.0)
          .at_least(1.0001),
      OptionSpec::boolean("trainable",
                          "learn the table (false: keep its initialisation, a fixed encoding)")
          .with_default(true)};
}

PositionTables::PositionTables(torch::nn::Module& owner,
                               const std::vector<int64_t>& max_position,
                               int64_t d_model,
                               const Options& o)
    : max_position_(max_position) {
  const std::string init = o.get_string("init");
  const double init_std = o.get_float("init_std");
  const double init_scale = o.get_float("init_scale");
  const double init_base = o.get_float("init_base");
  const bool trainable = o.get_bool("trainable");
  for (size_t l = 0; l < max_position.size(); ++l) {
    const int64_t rows = max_position[l] + 1;  // IDs 0..max_position
    torch::Tensor w = init == "sinusoidal" ? sinusoidal_table(rows, d_model, init_base) * init_scale
                                           : torch::randn({rows, d_model}) * init_std;
    tables_.push_back(owner.register_parameter(fmt::format("level{}", l), w, trainable));
  }
}

torch::Tensor PositionTables::embed(const torch::Tensor& ids) const {
  torch::Tensor out;
  for (size_t l = 0; l < tables_.size(); ++l) {
    auto e = torch::embedding(tables_[l], ids[static_cast<int64_t>(l)]);  // [B, T, C]
    out = out.defined() ? out + e : e;
  }
  return out;
}

void PositionTables::check(const torch::Tensor& ids) const {
  for (size_t l = 0; l < tables_.size(); ++l) {
    const int64_t hi = ids[static_cast<int64_t>(l)].max().item<int64_t>();
    const int64_t lo = ids[static_cast<int64_t>(l)].min().item<int64_t>();
    LENGEN_CHECK(lo >= 0, "level {} has a negative position ID {}", l, lo);
    LENGEN_CHECK(hi <= max_position_[l],
                 "a sample needs position ID {} at level {} but max_position is {}",
                 hi,
                 l,
                 max_position_[l]);
  }
}

torch::Tensor PositionTables::random_offsets(const torch::Tensor& ids,
                                             const torch::Tensor& segments) const {
  const int64_t L = levels();
  auto used = ids.slice(0, 0, L);  // [L, B, T]
  // One delta per sample: per row, or per segment of a packed row (G = T slots, enough for
  // any number of samples; padding, segment -1, goes with slot 0 and is never shifted).
  torch::Tensor slot;  // [L, B, T]
  if (segments.defined()) {
    slot = segments.clamp_min(0).unsqueeze(0).expand_as(used);
  }
  auto max_id = slot.defined() ? torch::zeros_like(used).scatter_reduce(
                                     2, slot, used, "amax", /*include_self=*/true)
                               : std::get<0>(used.max(2));  // [L, B, G] or [L, B]
  // max_position - max_id with the limits as scalars: a host tensor moved to a GPU would be a
  // copy that waits for the device on every step.
  torch::Tensor room;  // [L, B]
  if (std::all_of(max_position_.begin(), max_position_.end(), [&](int64_t m) {
        return m == max_position_[0];
      })) {
    room = torch::rsub(max_id, max_position_[0]);
  } else {
    std::vector<torch::Tensor> rows;
    for (int64_t l = 0; l < L; ++l)
      rows.push_back(torch::rsub(max_id[l], max_position_[l]));
    room = torch::stack(rows);
  }
  // On a GPU, reading `room` back would stall every training step; the Trainer checks each
  // batch's IDs on the host before upload (check_ids), so only host tensors are checked here,
  // straight from their memory (item() is how a device is read: OpCounter::host_reads).
  if (ids.device().is_cpu() && *room.min().data_ptr<int64_t>() < 0) {
    auto level = std::get<0>(room.reshape({L, -1}).min(1)).argmin().item<int64_t>();  // [L, B(*G)]
    LENGEN_FAIL("a training sample needs position ID {} at level {} but max_position is {}",
                max_id[level].max().item<int64_t>(),
                level,
                max_position_[level]);
  }
  auto u = torch::rand(room.sizes(), torch::TensorOptions().device(ids.device()));  // [L, B(, G)]
  auto delta = (u * (room + 1).to(torch::kFloat32))
                   .floor()
                   .to(torch::kInt64)
                   .clamp_max(room);                                    // [L, B(, G)]
  delta = slot.defined() ? delta.gather(2, slot) : delta.unsqueeze(2);  // [L, B, T|1]
  return used + delta * (used != 0).to(torch::kInt64);                  // [L, B, T]
}

std::pair<torch::Tensor, torch::Tensor> PositionTables::random_offsets_pair(
    const torch::Tensor& source, const torch::Tensor& target) const {
  const int64_t L = levels(), S = source.size(2);
  auto both = torch::cat({source.slice(0, 0, L), target.slice(0, 0, L)}, 2);  // [L, B, S+U]
  auto shifted = random_offsets(both);                                        // [L, B, S+U]
  return {shifted.narrow(2, 0, S), shifted.narrow(2, S, target.size(2))};
}

}  // namespace lengen
