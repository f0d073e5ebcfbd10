// RelativeVectors: Shaw et al.'s clipped relative vectors.
#include "lengen/position/relative_vectors.h"

#include "lengen/core/error.h"

namespace lengen {

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
