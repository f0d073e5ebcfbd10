#pragma once

#include "lengen/config/schema.h"
#include "lengen/core/export.h"
#include "lengen/position/attention_context.h"
#include "lengen/registry/registry.h"

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lengen {

/// The hooks a scheme can implement; the model calls only the ones a scheme declares.
enum Hook : uint32_t {
  kHookNone = 0,
  kHookInputEmbedding = 1u << 0,  ///< embed(): a vector per token added to the token embedding
  kHookQKTransform = 1u << 1,     ///< transform_qk(): rotates/transforms q and k (RoPE)
  kHookAdditiveBias = 1u << 2,    ///< additive_bias(): [B|1, H, T, S] added to the logits
  kHookRelativeLogits = 1u << 3,  ///< relative_logits(): q-dependent relative terms
  kHookRelativeValues = 1u << 4,  ///< relative_values(): a term added to each query's output
};

/// A learned table of position vectors that a scheme adds to the token embedding, described by
/// what indexes it: code that sets weights by hand (TAOTP programs, the addition construction)
/// finds the tables it needs through this capability, never through a scheme's name.
struct LearnedPositionTable {
  torch::Tensor
      weight;  ///< [rows, C], one of the scheme's parameters: row p is added at position p
  bool sequence_index =
      false;          ///< indexed by the sequence index 0..T-1; else by `level` of the task's IDs
  int64_t level = 0;  ///< the level of the task's IDs (when !sequence_index)
};

/// Framework facts a scheme may need at construction (never the global config).
struct SchemeContext {
  int64_t d_model = 0;          ///< C
  int64_t heads = 0;            ///< H
  int64_t head_dim = 0;         ///< D
  int64_t layers = 0;           ///< number of layers in the stack
  int64_t position_levels = 1;  ///< L: levels of position IDs the task emits
  /// The run directory (RUN) the model belongs to, for schemes that read files a stage wrote
  /// (ABC's bias); "" when unknown (e.g. a model built in a test).
  std::string run_dir;
};

/// A position scheme: a torch module created by name from YAML. Its parameters are part of
/// the model (saved in checkpoints under "position.<i>.").
///
/// Contract (checked by the contract tests for every registered scheme):
///   * hooks() names exactly the hooks the scheme overrides;
///   * a full forward pass and KV-cached incremental decoding give the same logits;
///   * transform_ids is deterministic when training == false.
class LENGEN_API PositionScheme : public torch::nn::Module {
 public:
  ~PositionScheme() override;

  /// Bit set of Hook values this scheme implements.
  virtual uint32_t hooks() const = 0;

  /// The IDs every hook of this scheme sees: transform_ids, then the framework's transforms
  /// shared by every scheme, in this order: `randomized: N` (training only: Ruoss et al.'s
  /// randomized positions, each sample's ID values 0..M mapped in order onto a sorted random
  /// sample of M + 1 distinct values from [0, N)) and `cyclic: T` (each ID taken modulo T,
  /// Duan & Shi's cyclic position indexing). The model calls these, never transform_ids
  /// directly.
  ///
  /// Packed rows (several samples in one row, Batch::segments): `segments` ([B, T] int64,
  /// which sample of its row each token belongs to, -1 on padding) and `sequence_index` ([B,
  /// T] int64, each token's index within its own sample), both defined or both not. Schemes
  /// that read the sequence index (PositionSource `ids: index`) see `sequence_index` instead of
  /// offset..offset+T-1, and per-sample randomness (random offsets) is drawn per segment.
  torch::Tensor position_ids(const torch::Tensor& ids,
                             int64_t offset,
                             bool training,
                             const torch::Tensor& segments = {},
                             const torch::Tensor& sequence_index = {});
  /// transform_ids_pair, then the shared transforms on both sides.
  std::pair<torch::Tensor, torch::Tensor> position_ids_pair(const torch::Tensor& source,
                                                            const torch::Tensor& target,
                                                            bool training);

  /// Period of cyclic position indexing (0: off). Set from the entry's `cyclic:` key.
  void set_cyclic(int64_t period) { cyclic_ = period; }

  int64_t cyclic() const { return cyclic_; }

  /// Range N of randomized positions in training (0: off). Set from the entry's `randomized:`.
  void set_randomized(int64_t range) { randomized_ = range; }

  int64_t randomized() const { return randomized_; }

  /// Whether the scheme has a meaning in this kind of attention. Self-attention: the model
  /// refuses an architecture whose self-attention kind a scheme does not support (schemes
  /// with only the input-embedding hook are accepted everywhere). Cross-attention: the
  /// scheme's attention hooks are called there only when it returns true (T5-style: by
  /// default cross-attention carries no positional term). Default: causal and bidirectional
  /// self-attention.
  virtual bool supports(AttentionKind kind) const;

  /// Transforms the task's IDs before any hook sees them (random offsets during training,
  /// cyclic indexing, level selection, sequence indices). ids: [L, B, T] int64 -> [L', B, T], or
  /// [L', 1, T] when the positions are the same for every sample (hooks broadcast over B).
  /// `offset` is the absolute sequence index of column 0 (the KV-cache length when decoding).
  /// Default: identity.
  virtual torch::Tensor transform_ids(const torch::Tensor& ids, int64_t offset, bool training);

  /// The IDs of an encoder-decoder's source [L, B, S] and target [L, B, U] for one forward
  /// pass over whole sequences (plugin ABI >= 2): -> (source [L', B|1, S], target
  /// [L', B|1, U]). Randomness (e.g. offsets) must be drawn once per sample and shared by
  /// both sides so that coupled IDs stay aligned across cross-attention. Default:
  /// transform_ids of each side at offset 0, right for deterministic transforms; a scheme
  /// with training-time randomness overrides it (see PositionTables::random_offsets_pair).
  virtual std::pair<torch::Tensor, torch::Tensor> transform_ids_pair(const torch::Tensor& source,
                                                                     const torch::Tensor& target,
                                                                     bool training);

  /// Fails (lengen::Error) when `ids` ([L, B, T], as emitted by the task for evaluation) need
  /// something the scheme cannot provide, e.g. an ID above max_position. Default: accepts.
  virtual void check_ids(const torch::Tensor& ids) const;

  /// kHookInputEmbedding: ids [L', B, T] (transformed) -> [B, T, C].
  virtual torch::Tensor embed(const torch::Tensor& ids);

  /// kHookQKTransform: q [B, H, T, D], k [B, H, T, D] (new keys only) -> transformed pair.
  virtual std::pair<torch::Tensor, torch::Tensor> transform_qk(const torch::Tensor& q,
                                                               const torch::Tensor& k,
                                                               const AttentionContext& ctx);

  /// kHookAdditiveBias: -> [B or 1, H or 1, T, S] added to the attention logits; an undefined
  /// tensor adds nothing (e.g. a layer or attention kind the scheme leaves alone, which then
  /// keeps the fused kernel).
  virtual torch::Tensor additive_bias(const AttentionContext& ctx);

  /// kHookRelativeLogits: q [B, H, T, D], k [B, H, S, D] -> [B, H, T, S] added to the
  /// (already scaled) logits.
  virtual torch::Tensor relative_logits(const torch::Tensor& q,
                                        const torch::Tensor& k,
                                        const AttentionContext& ctx);

  /// kHookRelativeValues (plugin API >= 1): probs [B, H, T, S] (the attention weights that
  /// multiply the values, after dropout when training) -> [B, H, T, D] added to the attention
  /// output before the heads are merged (Shaw et al.'s sum_j a_ij w^V_{ij}).
  virtual torch::Tensor relative_values(const torch::Tensor& probs, const AttentionContext& ctx);

  /// The learned tables embed() adds, in evaluation summed as they are: embed(position_ids(ids,
  /// 0, false)) is the sum over the tables of weight[position] (checked by the contract test for
  /// schemes whose only hook is the input embedding). Training-time transforms (random offsets)
  /// may differ. Default: none. (ABI >= 8.)
  virtual std::vector<LearnedPositionTable> learned_tables() const;

 protected:
  /// During position_ids(): the packed rows' per-sample sequence index [B, T], else undefined
  /// (the index is then offset..offset+T-1). What SourcedPositionScheme passes to its source.
  const torch::Tensor& sequence_index() const { return sequence_index_; }

  /// During position_ids(): the packed rows' segments [B, T] (-1 on padding), else undefined.
  /// What a scheme with per-sample randomness passes on (PositionTables::random_offsets).
  const torch::Tensor& segments() const { return segments_; }

 private:
  /// `sides` are the IDs of one forward ([L', B|1, T] each, one per attention side); a
  /// randomized map is drawn per sample and shared by the sides.
  std::vector<torch::Tensor> shared_transforms(std::vector<torch::Tensor> sides,
                                               int64_t batch,
                                               bool training) const;

  int64_t cyclic_ = 0;
  int64_t randomized_ = 0;
  torch::Tensor sequence_index_;
  torch::Tensor segments_;
};

/// Which positions an absolute scheme consumes: the sequence index 0..T-1 (`ids: index`, the
/// usual APE) or one level of the task's IDs (`ids: task`, `level: l`). Shared by the APE and
/// sinusoidal plugins; declare options() in the scheme's spec.
class LENGEN_API PositionSource {
 public:
  /// The options `ids` (index | task) and `level`.
  static std::vector<OptionSpec> options();
  PositionSource() = default;
  /// Fails naming `level` when the task emits fewer levels.
  PositionSource(const Options& o, const SchemeContext& ctx);
  /// ids [L, B, T] -> [1, B, T] (ids: task) or [1, 1, T] (ids: index, the same for every
  /// sample); `offset` is the absolute index of column 0. With `sequence_index` ([B, T], packed
  /// rows) `ids: index` gives it, [1, B, T], instead.
  torch::Tensor select(const torch::Tensor& ids,
                       int64_t offset,
                       const torch::Tensor& sequence_index = {}) const;

  /// The table of `weight` over the positions this source selects.
  LearnedPositionTable table(const torch::Tensor& weight) const { return {weight, index_, level_}; }

 private:
  bool index_ = true;
  int64_t level_ = 0;
};

/// Base for schemes that read one position per token from a PositionSource: it holds the
/// source (declare PositionSource::options() in the spec) and implements transform_ids.
class LENGEN_API SourcedPositionScheme : public PositionScheme {
 public:
  SourcedPositionScheme(const Options& o, const SchemeContext& ctx);
  ~SourcedPositionScheme() override;
  /// ids [L, B, T] -> the selected positions [1, B|1, T].
  torch::Tensor transform_ids(const torch::Tensor& ids, int64_t offset, bool training) override;

 protected:
  PositionSource source_;
};

/// One learned embedding table per position level, summed: the storage behind learned APE and
/// Position Coupling. Parameters "level<l>.weight" [max_position_l + 1, C].
class LENGEN_API PositionTables {
 public:
  PositionTables() = default;
  /// The initialisation options `init` (normal | sinusoidal, default `default_init`),
  /// `init_std`, `init_scale` and `init_base`.
  static std::vector<OptionSpec> init_options(const std::string& default_init);

  /// Registers one table per entry of `max_position` on `owner`, initialised as the
  /// init_options() in `o` say: N(0, init_std) or
  /// sinusoidal_table(rows, C, init_base) * init_scale.
  PositionTables(torch::nn::Module& owner,
                 const std::vector<int64_t>& max_position,
                 int64_t d_model,
                 const Options& o);

  /// ids [L, B, T] -> sum over levels of table_l[ids_l], [B, T, C].
  torch::Tensor embed(const torch::Tensor& ids) const;

  /// Fails naming the level, the largest ID and max_position when an ID is out of range.
  void check(const torch::Tensor& ids) const;

  /// Training-time random offsets (Cho et al.): per sample and level, adds
  /// delta ~ U[0, max_position_l - max ID of the sample at level l] to every non-zero ID.
  /// With `segments` ([B, T], packed rows: PositionScheme::segments()) a sample is a segment
  /// of a row, each with its own delta; without, a row.
  torch::Tensor random_offsets(const torch::Tensor& ids, const torch::Tensor& segments = {}) const;

  /// random_offsets for an encoder-decoder's source [L, B, S] and target [L, B, U]: one delta
  /// per sample and level, drawn over both sides together, added to both.
  std::pair<torch::Tensor, torch::Tensor> random_offsets_pair(const torch::Tensor& source,
                                                              const torch::Tensor& target) const;

  int64_t levels() const { return static_cast<int64_t>(tables_.size()); }

  /// Table l, [max_position_l + 1, C] (the parameter "level<l>").
  const torch::Tensor& weight(int64_t level) const {
    return tables_.at(static_cast<size_t>(level));
  }

  const std::vector<int64_t>& max_position() const { return max_position_; }

 private:
  std::vector<int64_t> max_position_;
  std::vector<torch::Tensor> tables_;
};

/// True when `a` and `b` hold the same positions: the same tensor or the same view of the same
/// memory (position IDs are never written in place), or, on the CPU, equal content. On a GPU
/// content is not compared (that would read back from the device). The test behind PositionMemo.
LENGEN_API bool same_positions(const torch::Tensor& a, const torch::Tensor& b);

/// Remembers what a scheme computes from the positions of an attention call alone (ALiBi's
/// bias, T5's buckets, FIRE's distance pairs, RoPE's angles, RPE's clipped indices), so every
/// layer of a forward pass and every later step with the same positions reuse it instead of
/// recomputing it. Never store anything that depends on parameters (it would go stale).
///
///   memo_.get(ctx, [&] { return expensive(ctx.query_ids, ctx.key_ids); })
template <class Value = torch::Tensor>
class PositionMemo {
 public:
  /// The remembered value for ctx's query and key IDs (and `variant`, e.g. causal or not),
  /// computing and remembering it with `compute()` on a miss.
  template <class Compute>
  const Value& get(const AttentionContext& ctx, Compute&& compute, int64_t variant = 0) {
    if (!(valid_ && variant == variant_ && same_positions(ctx.query_ids, query_ids_) &&
          same_positions(ctx.key_ids, key_ids_))) {
      value_ = compute();
      query_ids_ = ctx.query_ids;
      key_ids_ = ctx.key_ids;
      variant_ = variant;
      valid_ = true;
    }
    return value_;
  }

 private:
  bool valid_ = false;
  int64_t variant_ = 0;
  torch::Tensor query_ids_, key_ids_;
  Value value_{};
};

/// Learned relative-position vectors indexed by the clipped distance p_i - p_j between query
/// and key positions (Shaw et al. 2018; Huang et al. 2020): the storage and arithmetic behind
/// RPE_k and RPE_{k,q}. One table of 2k+1 head-width vectors per layer (or one shared), shared
/// by the heads; optional value vectors. Parameters "key_vectors" [layers|1, 2k+1, D] and
/// "value_vectors" (same shape, when enabled).
class LENGEN_API RelativeVectors {
 public:
  RelativeVectors() = default;
  /// The options `k`, `per_layer`, `values` and `init_std`.
  static std::vector<OptionSpec> options();
  /// Registers the tables on `owner` as the options in `o` say.
  RelativeVectors(torch::nn::Module& owner, const Options& o, const SchemeContext& ctx);
  /// Table row of each (query, key) pair: clip(p_i - p_j, -k, k) + k, [B|1, T, S], from the
  /// first level of the context's IDs; remembered while the positions stay the same.
  const torch::Tensor& index(const AttentionContext& ctx);
  /// q_i . r_ij / sqrt(D): q [B, H, T, D] -> [B, H, T, S].
  torch::Tensor query_term(const torch::Tensor& q, const AttentionContext& ctx);
  /// k_j . r_ij / sqrt(D): k [B, H, S, D] -> [B, H, T, S].
  torch::Tensor key_term(const torch::Tensor& k, const AttentionContext& ctx);
  /// sum_j probs_ij w^V_ij: probs [B, H, T, S] -> [B, H, T, D]. Only with `values: true`.
  torch::Tensor value_term(const torch::Tensor& probs, const AttentionContext& ctx);

  bool has_values() const { return values_.defined(); }

  int64_t k() const { return k_; }

 private:
  torch::Tensor table(const torch::Tensor& t, const AttentionContext& ctx) const;

  int64_t k_ = 0;
  bool per_layer_ = true;
  torch::Tensor keys_, values_;
  PositionMemo<> index_;
};

/// Sinusoidal table [rows, dim]: row p = (sin(p w_0), cos(p w_0), sin(p w_1), ...),
/// w_i = base^(-2i/dim) (Vaswani et al. 2017: base 10000). Shared by the APE and coupling
/// plugins. A short table (tens of IDs) wants a small base: with 10000 most columns are
/// nearly constant over its rows and the few fast ones alias after about 2*pi rows.
LENGEN_API torch::Tensor sinusoidal_table(int64_t rows, int64_t dim, double base = 10000.0);

/// The position schemes (`position: [...]`), and the one a PositionScheme class registers in
/// (Registrar::add_position).
using PositionRegistry = Registry<PositionScheme, SchemeContext>;
LENGEN_API PositionRegistry& position_registry();

inline PositionRegistry& registry_of(const PositionScheme*) {
  return position_registry();
}

/// Adds a position scheme to position_registry() with the options the framework gives every
/// scheme (`cyclic`) appended to its spec and applied to what `make` builds.
LENGEN_API void add_position_scheme(ComponentSpec spec,
                                    PluginOrigin origin,
                                    PositionRegistry::Factory make);

}  // namespace lengen
