#pragma once

// The position scheme interface and its registry. Helpers a scheme may build on have one
// header each: source.h, sourced_scheme.h, tables.h, memo.h, relative_vectors.h, sinusoidal.h.

#include "lengen/config/schema.h"
#include "lengen/core/export.h"
#include "lengen/position/attention_context.h"
#include "lengen/position/hook.h"
#include "lengen/position/learned_table.h"
#include "lengen/position/scheme_context.h"
#include "lengen/registry/registry.h"

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lengen {

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
