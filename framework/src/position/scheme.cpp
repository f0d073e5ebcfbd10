// What every position scheme shares: the base class's defaults, the framework's options
// (`cyclic`), sinusoidal tables, position sources and learned tables, the positions memo and
// clipped relative vectors.
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

torch::Tensor sinusoidal_table(int64_t rows, int64_t dim, double base) {
  LENGEN_CHECK(base > 1.0, "the sinusoidal base must be > 1, got {}", base);
  auto pos = torch::arange(rows, torch::kFloat64).unsqueeze(1);                  // [P, 1]
  auto i = torch::arange((dim + 1) / 2, torch::kFloat64);                        // [C/2]
  auto freq = torch::exp(-std::log(base) * 2.0 * i / static_cast<double>(dim));  // [C/2]
  auto angle = pos * freq.unsqueeze(0);                                          // [P, C/2]
  auto table =
      torch::stack({torch::sin(angle), torch::cos(angle)}, 2).reshape({rows, -1});  // [P, C']
  return table.slice(1, 0, dim).to(torch::kFloat32).contiguous();                   // [P, C]
}

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

SourcedPositionScheme::SourcedPositionScheme(const Options& o, const SchemeContext& ctx)
    : source_(o, ctx) {}

SourcedPositionScheme::~SourcedPositionScheme() = default;

torch::Tensor SourcedPositionScheme::transform_ids(const torch::Tensor& ids,
                                                   int64_t offset,
                                                   bool /*training*/) {
  return source_.select(ids, offset, sequence_index());  // [1, B|1, T]
}

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

// ---------------------------------------------------------------------------------------
// PositionMemo, RelativeVectors

bool same_positions(const torch::Tensor& a, const torch::Tensor& b) {
  if (!a.defined() || !b.defined()) {
    return a.defined() == b.defined();
  }
  // Holding the remembered IDs keeps their storage alive, so the same view of the same memory
  // holds the same IDs as long as nobody writes IDs in place (nothing in lengen does; a training
  // step replayed as a CUDA graph rewrites its input buffers, which is why its eager steps
  // never run on them). That test reads nothing; LibTorch 2.x's torch::equal makes it too.
  if (a.is_same(b)) {
    return true;
  }
  if (a.sizes() != b.sizes() || a.device() != b.device() || a.scalar_type() != b.scalar_type()) {
    return false;
  }
  if (a.is_alias_of(b) && a.storage_offset() == b.storage_offset() && a.strides() == b.strides()) {
    return true;
  }
  // Equal content in other memory: compared on the CPU only. On a GPU the comparison is a read
  // back that stalls the step (and cannot be recorded in a CUDA graph); recomputing is cheaper.
  return a.device().is_cpu() && torch::equal(a, b);
}

std::vector<OptionSpec> RelativeVectors::options() {
  return {OptionSpec::integer(
              "k",
              "clip distance: |p_i - p_j| > k shares the vector of k. Default 511: "
              "Hugging Face BERT's relative_key(_query) with max_position_embeddings 512, "
              "which Jelassi et al. used: never clipped below 512 tokens; Shaw et al. "
              "clipped at 16")
              .with_default(511)
              .at_least(1),
          OptionSpec::boolean("per_layer", "one table per layer (Shaw) instead of one shared")
              .with_default(true),
          OptionSpec::boolean("values", "also learned relative value vectors (Shaw's a^V)")
              .with_default(false),
          OptionSpec::number("init_std", "std of the normal initialisation")
              .with_default(0.02)
              .at_least(0)};
}

RelativeVectors::RelativeVectors(torch::nn::Module& owner,
                                 const Options& o,
                                 const SchemeContext& ctx)
    : k_(o.get_int("k")), per_layer_(o.get_bool("per_layer")) {
  const int64_t tables = per_layer_ ? ctx.layers : 1;
  const double std = o.get_float("init_std");
  keys_ = owner.register_parameter("key_vectors",
                                   torch::randn({tables, 2 * k_ + 1, ctx.head_dim}) * std);
  if (o.get_bool("values")) {
    values_ = owner.register_parameter("value_vectors",
                                       torch::randn({tables, 2 * k_ + 1, ctx.head_dim}) * std);
  }
}

const torch::Tensor& RelativeVectors::index(const AttentionContext& ctx) {
  return index_.get(ctx, [&] {
    auto dist = ctx.query_ids[0].unsqueeze(2) - ctx.key_ids[0].unsqueeze(1);  // [B|1, T, S]
    return dist.clamp(-k_, k_) + k_;
  });
}

torch::Tensor RelativeVectors::table(const torch::Tensor& t, const AttentionContext& ctx) const {
  return t[per_layer_ ? ctx.layer : 0];  // [R, D]
}

namespace {

// The table rows the index uses, [lo, hi], and the index shifted to start at lo. A table far
// longer than the sequences (k = 511, Hugging Face's relative_key: 1023 rows for 41 tokens)
// would otherwise cost a product with every row; reading the bounds syncs a GPU, so it is
// done only then.
std::pair<torch::Tensor, torch::Tensor> used_rows(const torch::Tensor& table,
                                                  const torch::Tensor& idx) {
  const int64_t rows = table.size(0);
  if (rows <= 2 * (idx.size(-2) + idx.size(-1))) {
    return {table, idx};
  }
  const int64_t lo = idx.min().item<int64_t>();
  const int64_t hi = idx.max().item<int64_t>();
  return {table.narrow(0, lo, hi - lo + 1), idx - lo};
}

}  // namespace

torch::Tensor RelativeVectors::query_term(const torch::Tensor& q, const AttentionContext& ctx) {
  auto [rows, idx] = used_rows(table(keys_, ctx), index(ctx));  // [R, D], [B, T, S]
  auto per_row = torch::matmul(q, rows.t().to(q.dtype()));      // [B, H, T, R]
  auto gather_idx = idx.unsqueeze(1).expand({q.size(0), q.size(1), idx.size(1), idx.size(2)});
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  return per_row.gather(-1, gather_idx) * scale;  // [B, H, T, S]
}

torch::Tensor RelativeVectors::key_term(const torch::Tensor& k, const AttentionContext& ctx) {
  auto [rows, idx] = used_rows(table(keys_, ctx), index(ctx));            // [R, D], [B, T, S]
  auto per_key = torch::matmul(rows.to(k.dtype()), k.transpose(-2, -1));  // [B, H, R, S]
  auto gather_idx = idx.unsqueeze(1).expand({k.size(0), k.size(1), idx.size(1), idx.size(2)});
  const double scale = 1.0 / std::sqrt(static_cast<double>(k.size(-1)));
  return per_key.gather(2, gather_idx) * scale;  // [B, H, T, S]
}

torch::Tensor RelativeVectors::value_term(const torch::Tensor& probs, const AttentionContext& ctx) {
  LENGEN_CHECK(values_.defined(), "internal: value_term without value vectors");
  auto [rows, idx] = used_rows(table(values_, ctx), index(ctx));  // [R, D], [B, T, S]
  auto scatter_idx = idx.unsqueeze(1).expand(probs.sizes());      // [B, H, T, S]
  auto sizes = probs.sizes().vec();
  sizes.back() = rows.size(0);
  auto mass =
      torch::zeros(sizes, probs.options()).scatter_add(-1, scatter_idx, probs);  // [B, H, T, R]
  return torch::matmul(mass, rows.to(probs.dtype()));                            // [B, H, T, D]
}

}  // namespace lengen
