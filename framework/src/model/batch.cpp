// Padding examples of each layout into tensors (the batch contract is in batch.h).
#include "lengen/model/batch.h"

#include "lengen/core/error.h"

#include <torch/nn/functional/padding.h>

#include <algorithm>

namespace lengen {

Batch Batch::to(const torch::Device& device) const {
  if (device.is_cpu()) {
    return *this;
  }
  Batch b = *this;
  for (torch::Tensor* t : {&b.inputs,
                           &b.targets,
                           &b.mask,
                           &b.ids,
                           &b.padding,
                           &b.source,
                           &b.source_ids,
                           &b.source_padding,
                           &b.segments,
                           &b.sequence_index}) {
    if (t->defined()) {
      *t = t->to(device, /*non_blocking=*/true);
    }
  }
  if (labelled.defined()) {
    b.labelled = labelled.is_same(mask) ? b.mask : labelled.to(device, /*non_blocking=*/true);
  }
  return b;
}

ModelInputs Batch::model_inputs(bool scored_rows_only) const {
  ModelInputs in;
  in.outputs_from = scored_rows_only ? first_scored : 0;
  in.tokens = inputs;
  in.ids = ids;
  in.padding = padding;
  in.source = source;
  in.source_ids = source_ids;
  in.source_padding = source_padding;
  in.lengths = lengths;
  in.segments = segments;
  in.sequence_index = sequence_index;
  in.labelled = labelled;  // [B, T] float, 1 where labelled (labeled layout)
  return in;
}

Batch pad_sequence_batch(const Batch& b, int64_t length, int64_t first_scored) {
  LENGEN_CHECK(!b.padding.defined() && !b.source.defined(),
               "internal: only one-sequence batches pad to a fixed shape (this one has {})",
               b.source.defined() ? "a source" : "key padding");
  LENGEN_CHECK(!b.segments.defined(), "internal: a packed batch is not padded to a fixed shape");
  const int64_t T = b.inputs.size(1);
  LENGEN_CHECK(length >= T && first_scored >= 0 && first_scored <= b.first_scored,
               "internal: padding a batch of {} positions (scored from {}) to {} (from {})",
               T,
               b.first_scored,
               length,
               first_scored);
  Batch out = b;
  out.first_scored = first_scored;
  if (length == T) {
    return out;
  }
  namespace F = torch::nn::functional;
  const auto right = F::PadFuncOptions({0, length - T});
  out.inputs = F::pad(b.inputs, right);
  out.targets = F::pad(b.targets, right);
  out.mask = F::pad(b.mask, right);
  out.ids = F::pad(b.ids, right);
  return out;
}

int64_t Batch::padded_tokens() const {
  return (inputs.defined() ? inputs.numel() : 0) + (source.defined() ? source.numel() : 0);
}

std::vector<std::vector<size_t>> length_buckets(const std::vector<size_t>& lengths,
                                                int64_t buckets) {
  LENGEN_CHECK(buckets >= 1, "length_buckets: buckets must be >= 1, got {}", buckets);
  std::vector<size_t> order(lengths.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::stable_sort(
      order.begin(), order.end(), [&](size_t a, size_t b) { return lengths[a] < lengths[b]; });
  const size_t n = order.size();
  const size_t k = std::min(n, static_cast<size_t>(buckets));
  std::vector<std::vector<size_t>> out;
  size_t begin = 0;
  for (size_t g = 0; g < k; ++g) {
    const size_t end = (g + 1) * n / k;  // equal counts up to one
    out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(begin),
                     order.begin() + static_cast<std::ptrdiff_t>(end));
    begin = end;
  }
  return out;
}

namespace {

// Rows of (tokens, ids) right-padded into [B, T] tokens, [L, B, T] ids and a [B, T] padding
// mask (true on padding). `take(b)` gives row b's tokens and IDs and how many to copy.
struct Padded {
  torch::Tensor tokens, ids, padding;
};

Padded pad_rows(const std::vector<const std::vector<int64_t>*>& rows,
                const std::vector<const PositionIds*>& ids,
                int64_t length_cut,
                int64_t pad_id) {
  const int64_t B = static_cast<int64_t>(rows.size());
  LENGEN_CHECK(B > 0, "make_batch: no examples");
  const int64_t L = static_cast<int64_t>(ids[0]->size());
  int64_t T = 0;
  for (const auto* r : rows) {
    T = std::max<int64_t>(T, static_cast<int64_t>(r->size()) - length_cut);
  }
  Padded p;
  p.tokens = torch::full({B, T}, pad_id, torch::kInt64);
  p.ids = torch::zeros({L, B, T}, torch::kInt64);
  p.padding = torch::ones({B, T}, torch::kBool);
  auto tk = p.tokens.accessor<int64_t, 2>();
  auto id = p.ids.accessor<int64_t, 3>();
  auto pd = p.padding.accessor<bool, 2>();
  for (int64_t b = 0; b < B; ++b) {
    LENGEN_CHECK(static_cast<int64_t>(ids[b]->size()) == L,
                 "make_batch: examples disagree on position levels ({} vs {})",
                 ids[b]->size(),
                 L);
    const int64_t n = static_cast<int64_t>(rows[b]->size()) - length_cut;
    for (int64_t t = 0; t < n; ++t) {
      tk[b][t] = (*rows[b])[t];
      pd[b][t] = false;
      for (int64_t l = 0; l < L; ++l) {
        id[l][b][t] = (*ids[b])[l][t];
      }
    }
  }
  return p;
}

// targets[b][t] = row[t + shift], mask[b][t] = mask_row[t + shift] over [B, T].
void fill_targets(Batch& out,
                  const std::vector<const std::vector<int64_t>*>& rows,
                  const std::vector<const std::vector<uint8_t>*>& masks,
                  int64_t shift,
                  int64_t pad_id) {
  const int64_t B = out.inputs.size(0), T = out.inputs.size(1);
  out.targets = torch::full({B, T}, pad_id, torch::kInt64);
  out.mask = torch::zeros({B, T}, torch::kFloat32);
  auto tg = out.targets.accessor<int64_t, 2>();
  auto mk = out.mask.accessor<float, 2>();
  out.scored = 0;
  int64_t first = T;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = static_cast<int64_t>(rows[b]->size()) - shift;
    for (int64_t t = 0; t < n; ++t) {
      tg[b][t] = (*rows[b])[t + shift];
      const bool scored = (*masks[b])[t + shift] != 0;
      mk[b][t] = scored ? 1.0f : 0.0f;
      out.scored += scored ? 1 : 0;
      first = scored ? std::min(first, t) : first;
    }
  }
  out.first_scored = first < T ? first : 0;
}

}  // namespace

Batch make_batch(const std::vector<Example>& examples, int64_t pad_id) {
  std::vector<const std::vector<int64_t>*> rows;
  std::vector<const PositionIds*> ids;
  std::vector<const std::vector<uint8_t>*> masks;
  for (const auto& e : examples) {
    rows.push_back(&e.tokens);
    ids.push_back(&e.position_ids);
    masks.push_back(&e.loss_mask);
  }
  Padded p = pad_rows(rows, ids, /*length_cut=*/1, pad_id);
  Batch b;
  b.inputs = p.tokens;
  b.ids = p.ids;
  fill_targets(b, rows, masks, /*shift=*/1, pad_id);
  b.tokens = (~p.padding).sum().item<int64_t>();
  return b;
}

Batch make_packed_batch(const std::vector<Example>& examples,
                        int64_t pad_id,
                        std::vector<std::vector<size_t>>* rows_out) {
  LENGEN_CHECK(!examples.empty(), "make_packed_batch: no examples");
  const size_t n = examples.size();
  const int64_t L = static_cast<int64_t>(examples[0].position_ids.size());
  // Each sample contributes its inputs tokens[0 .. n-2] (targets tokens[1 .. n-1]).
  std::vector<int64_t> len(n);
  int64_t T = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto& e = examples[i];
    LENGEN_CHECK(e.tokens.size() >= 2,
                 "make_packed_batch: sample {} has {} token(s); a sample "
                 "needs at least 2",
                 i,
                 e.tokens.size());
    LENGEN_CHECK(static_cast<int64_t>(e.position_ids.size()) == L,
                 "make_packed_batch: examples disagree on position levels ({} vs {})",
                 e.position_ids.size(),
                 L);
    len[i] = static_cast<int64_t>(e.tokens.size()) - 1;
    T = std::max(T, len[i]);
  }
  // First fit by decreasing length: rows of T positions.
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return len[a] > len[b]; });
  std::vector<std::vector<size_t>> rows;
  std::vector<int64_t> used;
  for (size_t i : order) {
    size_t r = 0;
    while (r < rows.size() && used[r] + len[i] > T)
      ++r;
    if (r == rows.size()) {
      rows.emplace_back();
      used.push_back(0);
    }
    rows[r].push_back(i);
    used[r] += len[i];
  }
  const int64_t B = static_cast<int64_t>(rows.size());
  Batch b;
  b.inputs = torch::full({B, T}, pad_id, torch::kInt64);
  b.targets = torch::full({B, T}, pad_id, torch::kInt64);
  b.mask = torch::zeros({B, T}, torch::kFloat32);
  b.ids = torch::zeros({L, B, T}, torch::kInt64);
  b.segments = torch::full({B, T}, int64_t{-1}, torch::kInt64);
  b.sequence_index = torch::zeros({B, T}, torch::kInt64);
  auto in = b.inputs.accessor<int64_t, 2>();
  auto tg = b.targets.accessor<int64_t, 2>();
  auto mk = b.mask.accessor<float, 2>();
  auto id = b.ids.accessor<int64_t, 3>();
  auto sg = b.segments.accessor<int64_t, 2>();
  auto sx = b.sequence_index.accessor<int64_t, 2>();
  b.scored = 0;
  b.tokens = 0;
  int64_t first = T;
  for (int64_t r = 0; r < B; ++r) {
    int64_t at = 0;
    for (size_t s = 0; s < rows[r].size(); ++s) {
      const Example& e = examples[rows[r][s]];
      const int64_t m = len[rows[r][s]];
      for (int64_t t = 0; t < m; ++t) {
        in[r][at + t] = e.tokens[t];
        tg[r][at + t] = e.tokens[t + 1];
        const bool scored = e.loss_mask[t + 1] != 0;
        mk[r][at + t] = scored ? 1.0f : 0.0f;
        b.scored += scored ? 1 : 0;
        first = scored ? std::min(first, at + t) : first;
        for (int64_t l = 0; l < L; ++l) {
          id[l][r][at + t] = e.position_ids[l][t];
        }
        sg[r][at + t] = static_cast<int64_t>(s);
        sx[r][at + t] = t;
      }
      at += m;
    }
    b.tokens += at;
  }
  b.first_scored = first < T ? first : 0;
  if (rows_out)
    *rows_out = std::move(rows);
  return b;
}

Batch make_seq2seq_batch(const std::vector<Seq2SeqExample>& examples, int64_t pad_id) {
  std::vector<const std::vector<int64_t>*> src, tgt;
  std::vector<const PositionIds*> src_ids, tgt_ids;
  std::vector<const std::vector<uint8_t>*> masks;
  for (const auto& e : examples) {
    src.push_back(&e.source);
    src_ids.push_back(&e.source_ids);
    tgt.push_back(&e.target);
    tgt_ids.push_back(&e.target_ids);
    masks.push_back(&e.loss_mask);
  }
  Padded s = pad_rows(src, src_ids, 0, pad_id);
  Padded t = pad_rows(tgt, tgt_ids, 1, pad_id);
  Batch b;
  b.source = s.tokens;
  b.source_ids = s.ids;
  b.source_padding = s.padding;
  b.inputs = t.tokens;
  b.ids = t.ids;
  fill_targets(b, tgt, masks, 1, pad_id);
  b.tokens = (~s.padding).sum().item<int64_t>() + (~t.padding).sum().item<int64_t>();
  return b;
}

Batch make_labeled_batch(const std::vector<LabeledExample>& examples, int64_t pad_id) {
  std::vector<const std::vector<int64_t>*> rows, labels;
  std::vector<const PositionIds*> ids;
  std::vector<const std::vector<uint8_t>*> masks;
  for (const auto& e : examples) {
    LENGEN_CHECK(e.labels.size() == e.tokens.size() && e.label_mask.size() == e.tokens.size(),
                 "make_labeled_batch: {} tokens but {} labels and {} mask entries",
                 e.tokens.size(),
                 e.labels.size(),
                 e.label_mask.size());
    rows.push_back(&e.tokens);
    labels.push_back(&e.labels);
    ids.push_back(&e.ids);
    masks.push_back(&e.label_mask);
  }
  Padded p = pad_rows(rows, ids, 0, pad_id);
  Batch b;
  b.inputs = p.tokens;
  b.ids = p.ids;
  b.padding = p.padding;
  fill_targets(b, labels, masks, 0, pad_id);
  b.labelled = b.mask;  // the labelled slots (adaptive looping's confidence)
  b.tokens = (~p.padding).sum().item<int64_t>();
  // Each sample's input tokens that carry no label (model.loops_per_length's n), on the host.
  std::vector<int64_t> lengths;
  for (const auto& e : examples) {
    int64_t n = 0;
    for (size_t t = 0; t < e.tokens.size(); ++t) {
      n += e.label_mask[t] == 0 && e.tokens[t] != pad_id;
    }
    lengths.push_back(n);
  }
  b.lengths = torch::tensor(lengths, torch::kInt64);  // [B]
  return b;
}

}  // namespace lengen
