// What every position scheme shares: the registry, the base class's defaults and the
// framework's options (`cyclic`, `randomized`).
#include "lengen/position/scheme.h"

#include "lengen/core/error.h"
#include "lengen/registry/registry.h"

namespace lengen {

PositionRegistry& position_registry() {
  static PositionRegistry r("position", "position schemes", "position[i]");
  return r;
}

// ---------------------------------------------------------------------------------------
// PositionScheme defaults

PositionScheme::~PositionScheme() = default;

bool PositionScheme::supports(AttentionKind kind) const {
  return kind != AttentionKind::kCross;
}

torch::Tensor PositionScheme::transform_ids(const torch::Tensor& ids,
                                            int64_t /*offset*/,
                                            bool /*training*/) {
  return ids;
}

std::pair<torch::Tensor, torch::Tensor> PositionScheme::transform_ids_pair(
    const torch::Tensor& source, const torch::Tensor& target, bool training) {
  return {transform_ids(source, 0, training), transform_ids(target, 0, training)};
}

void PositionScheme::check_ids(const torch::Tensor& /*ids*/) const {}

std::vector<torch::Tensor> PositionScheme::shared_transforms(std::vector<torch::Tensor> sides,
                                                             int64_t batch,
                                                             bool training) const {
  if (randomized_ > 0 && training) {
    // Ruoss et al. 2023: train on positions that are a sorted random sample of a range larger
    // than any test length, so that every distance and absolute value up to the range is seen.
    // Generalised to task IDs (coupled, repeated): per sample the ID values 0..M are mapped in
    // order onto M + 1 distinct values drawn from [0, N), so equal IDs stay equal and order is
    // kept. One host read (M) per forward.
    int64_t lo = 0, hi = 0;
    for (const auto& ids : sides) {
      lo = std::min(lo, ids.min().item<int64_t>());
      hi = std::max(hi, ids.max().item<int64_t>());
    }
    if (lo < 0 || hi >= randomized_) {
      throw Error(
          fmt::format("randomized positions: the IDs span [{}, {}], which a map onto [0, "
                      "randomized = {}) cannot hold in order; raise the scheme's "
                      "`randomized:` above {} (the longest training sequence's IDs)",
                      lo,
                      hi,
                      randomized_,
                      hi));
    }
    const auto opts = sides.front().options();
    // Per sample: the first hi + 1 of a random permutation of [0, N), sorted.
    auto keys = torch::rand({batch, randomized_}, opts.dtype(torch::kFloat32));
    auto map = std::get<1>(keys.topk(hi + 1, -1, /*largest=*/true, /*sorted=*/false));
    map = std::get<0>(map.sort(-1));  // [B, M + 1] increasing, distinct, in [0, N)
    for (auto& ids : sides) {
      auto full = ids.expand({ids.size(0), batch, ids.size(2)});          // [L', B, T]
      auto rows = map.unsqueeze(0).expand({ids.size(0), batch, hi + 1});  // [L', B, M + 1]
      ids = rows.gather(2, full);                                         // [L', B, T]
    }
  }
  if (cyclic_ > 0) {
    for (auto& ids : sides) {
      ids = torch::remainder(ids, cyclic_);
    }
  }
  return sides;
}

torch::Tensor PositionScheme::position_ids(const torch::Tensor& ids,
                                           int64_t offset,
                                           bool training,
                                           const torch::Tensor& segments,
                                           const torch::Tensor& sequence_index) {
  auto fits = [&](const torch::Tensor& t) {
    return t.dim() == 2 && t.size(0) == ids.size(1) && t.size(1) == ids.size(2);
  };
  LENGEN_CHECK(segments.defined() == sequence_index.defined() &&
                   (!segments.defined() || (offset == 0 && fits(segments) && fits(sequence_index))),
               "internal: packed rows need segments and a sequence index of [B, T] = [{}, {}] at "
               "offset 0",
               ids.size(1),
               ids.size(2));

  // Held only for this call: transform_ids (SourcedPositionScheme, random offsets) reads them.
  struct Hold {
    PositionScheme& s;

    ~Hold() { s.sequence_index_ = s.segments_ = torch::Tensor(); }
  } hold{*this};

  sequence_index_ = sequence_index;
  segments_ = segments;
  return shared_transforms({transform_ids(ids, offset, training)}, ids.size(1), training).front();
}

std::pair<torch::Tensor, torch::Tensor> PositionScheme::position_ids_pair(
    const torch::Tensor& source, const torch::Tensor& target, bool training) {
  auto [s, t] = transform_ids_pair(source, target, training);
  auto out = shared_transforms({s, t}, source.size(1), training);
  return {out[0], out[1]};
}

void add_position_scheme(ComponentSpec spec, PluginOrigin origin, PositionRegistry::Factory make) {
  spec.options.push_back(
      OptionSpec::integer("cyclic",
                          "cyclic position indexing (Duan & Shi): every ID this scheme "
                          "sees is taken modulo this period after its own transform; 0 = off")
          .with_default(int64_t{0})
          .at_least(0));
  spec.options.push_back(
      OptionSpec::integer("randomized",
                          "randomized positions (Ruoss et al. 2023), training only: "
                          "each sample's IDs 0..M are mapped in order onto a sorted "
                          "random sample of M + 1 distinct values from [0, N), N "
                          "this value (larger than any test length); evaluation "
                          "sees the IDs as they are; 0 = off")
          .with_default(int64_t{0})
          .at_least(0));
  position_registry().add(std::move(spec),
                          std::move(origin),
                          [make = std::move(make)](const Options& o, const SchemeContext& c) {
                            auto s = make(o, c);
                            s->set_cyclic(o.get_int("cyclic"));
                            s->set_randomized(o.get_int("randomized"));
                            if (s->randomized() > 0) {
                              // The remapped IDs reach values up to randomized - 1: the scheme's
                              // own limits (a table's max_position) must hold them.
                              // (A sequence of that many tokens for schemes that read the index.)
                              auto top = torch::full(
                                  {std::max<int64_t>(c.position_levels, 1), 1, s->randomized()},
                                  s->randomized() - 1,
                                  torch::kInt64);
                              try {
                                s->check_ids(top);
                              } catch (const Error& e) {
                                o.fail("randomized",
                                       fmt::format("randomized positions up to {} do not fit "
                                                   "this scheme: {}",
                                                   s->randomized() - 1,
                                                   e.what()));
                              }
                            }
                            return s;
                          });
}

namespace {
[[noreturn]] void missing_hook(const char* hook) {
  throw Error(
      fmt::format("internal: position scheme declares hook {} but does not implement it", hook));
}
}  // namespace

torch::Tensor PositionScheme::embed(const torch::Tensor&) {
  missing_hook("input_embedding");
}

std::pair<torch::Tensor, torch::Tensor> PositionScheme::transform_qk(const torch::Tensor&,
                                                                     const torch::Tensor&,
                                                                     const AttentionContext&) {
  missing_hook("qk_transform");
}

torch::Tensor PositionScheme::additive_bias(const AttentionContext&) {
  missing_hook("additive_bias");
}

torch::Tensor PositionScheme::relative_logits(const torch::Tensor&,
                                              const torch::Tensor&,
                                              const AttentionContext&) {
  missing_hook("relative_logits");
}

torch::Tensor PositionScheme::relative_values(const torch::Tensor&, const AttentionContext&) {
  missing_hook("relative_values");
}

std::vector<LearnedPositionTable> PositionScheme::learned_tables() const {
  return {};
}

}  // namespace lengen
