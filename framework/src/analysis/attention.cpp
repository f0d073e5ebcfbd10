#include "lengen/analysis/attention.h"

#include "lengen/core/error.h"
#include "lengen/core/file.h"
#include "lengen/core/log.h"
#include "lengen/core/rng.h"
#include "lengen/eval/evaluator.h"
#include "lengen/model/architecture.h"
#include "lengen/model/batch.h"
#include "lengen/report/report.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

namespace fs = std::filesystem;

namespace lengen {

std::vector<Example> cell_samples(const Task& task,
                                  const GridCell& cell,
                                  int64_t n,
                                  uint64_t seed) {
  Rng rng(mix_seed(seed, {0xA77}));
  std::vector<Example> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(task.sample_eval(cell, rng));
  return out;
}

namespace {

std::vector<int64_t> all_or(const std::vector<int64_t>& chosen, int64_t n, const char* what) {
  if (chosen.empty()) {
    std::vector<int64_t> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      out[static_cast<size_t>(i)] = i;
    return out;
  }
  for (int64_t v : chosen) {
    LENGEN_CHECK(v >= 0 && v < n, "{} {} does not exist (the model has {})", what, v, n);
  }
  return chosen;
}

}  // namespace

AttentionMaps mean_attention(Transformer& model,
                             const Task& task,
                             const std::vector<Example>& examples_in,
                             const torch::Device& device,
                             const AttentionRequest& req) {
  LENGEN_CHECK(!examples_in.empty(), "attention: no samples to average over");
  for (const auto& e : examples_in) {
    LENGEN_CHECK(e.length() == examples_in[0].length(),
                 "attention maps can be averaged only over samples of one length ({} and {})",
                 e.length(),
                 examples_in[0].length());
  }
  const std::vector<std::string> names = model->attention_names();
  const auto layers = all_or(req.layers, static_cast<int64_t>(names.size()), "layer");
  const auto heads = all_or(req.heads, model->config().heads, "head");
  model->eval();
  std::vector<Example> examples;
  if (req.correct_only) {
    // Exactly the greedy verdict (teacher_forced_exact_match is proven equal to it).
    auto ok = teacher_forced_exact_match(model, task, examples_in, device, req.batch_size);
    for (size_t i = 0; i < examples_in.size(); ++i) {
      if (ok[i])
        examples.push_back(examples_in[i]);
    }
    if (examples.empty()) {
      AttentionMaps none;  // the caller says what to do about it: it knows why it asked
      none.drawn = static_cast<int64_t>(examples_in.size());
      return none;
    }
  } else {
    examples = examples_in;
  }
  const Architecture& objective = model->arch();
  std::vector<torch::Tensor> sums;
  Batch first;
  torch::Tensor same_inputs, same_source;  // [T], [S] bool: the same token as the first sample's
  auto same_as_first =
      [](torch::Tensor& acc, const torch::Tensor& tokens, const torch::Tensor& reference) {
        if (!tokens.defined())
          return;
        auto same = tokens.eq(reference[0].unsqueeze(0)).all(0);
        acc = acc.defined() ? acc.logical_and(same) : same;
      };
  torch::NoGradGuard no_grad;
  model->set_attention_scores(req.pre_softmax);
  try {
    for (size_t b0 = 0; b0 < examples.size(); b0 += static_cast<size_t>(req.batch_size)) {
      const size_t b1 = std::min(examples.size(), b0 + static_cast<size_t>(req.batch_size));
      std::vector<Example> chunk(examples.begin() + static_cast<std::ptrdiff_t>(b0),
                                 examples.begin() + static_cast<std::ptrdiff_t>(b1));
      Batch b = objective.make_batch(task, chunk);
      if (b0 == 0)
        first = b;
      same_as_first(same_inputs, b.inputs, first.inputs);
      same_as_first(same_source, b.source, first.source);
      std::vector<torch::Tensor> attn;
      objective.logits(model, b.to(device), &attn);
      if (sums.empty())
        sums.resize(attn.size());
      for (int64_t l : layers) {
        auto s = attn[static_cast<size_t>(l)].to(torch::kCPU, torch::kFloat64).sum(0);  // [H, T, S]
        sums[static_cast<size_t>(l)] =
            sums[static_cast<size_t>(l)].defined() ? sums[static_cast<size_t>(l)] + s : s;
      }
    }
  } catch (...) {
    model->set_attention_scores(false);
    throw;
  }
  model->set_attention_scores(false);
  auto token_row = [&](const torch::Tensor& t) {  // [B, T] -> the first sample's token strings
    std::vector<std::string> out;
    for (int64_t i = 0; i < t.size(1); ++i)
      out.push_back(task.vocabulary().token(t[0][i].item<int64_t>()));
    return out;
  };
  // Decoder self-attention (and the encoder's of `encoder`) is over the model's inputs; an
  // encoder_decoder's encoder is over the source, its cross-attention from target to source.
  const std::vector<std::string> tokens = token_row(first.inputs);
  const std::vector<std::string> source = first.source.defined() ? token_row(first.source) : tokens;
  auto flags = [](const torch::Tensor& same) {
    const auto t = same.to(torch::kCPU, torch::kUInt8).contiguous();
    return std::vector<uint8_t>(t.data_ptr<uint8_t>(), t.data_ptr<uint8_t>() + t.numel());
  };
  const std::vector<uint8_t> constant_inputs = flags(same_inputs);
  const std::vector<uint8_t> constant_source =
      same_source.defined() ? flags(same_source) : constant_inputs;
  AttentionMaps out;
  out.samples = static_cast<int64_t>(examples.size());
  out.drawn = static_cast<int64_t>(examples_in.size());
  for (int64_t l : layers) {
    const auto mean = sums[static_cast<size_t>(l)] / static_cast<double>(examples.size());
    const std::string& nm = names[static_cast<size_t>(l)];
    const bool cross = nm.find(".cross") != std::string::npos;
    const bool enc = nm.rfind("encoder.", 0) == 0;
    for (int64_t h : heads) {
      AttentionMap m;
      m.layer = l;
      m.name = nm;
      m.head = h;
      m.mean = mean[h].contiguous();
      m.queries = enc ? source : tokens;
      m.keys = enc || cross ? source : tokens;
      m.constant_keys = enc || cross ? constant_source : constant_inputs;
      out.maps.push_back(std::move(m));
    }
  }
  return out;
}

std::string write_attention(const AttentionMaps& maps,
                            const std::string& dir,
                            const std::string& meta) {
  nlohmann::json j = meta.empty() ? nlohmann::json::object() : nlohmann::json::parse(meta);
  j["samples"] = maps.samples;
  j["drawn"] = maps.drawn;
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& m : maps.maps) {
    nlohmann::json rows = nlohmann::json::array();
    for (int64_t q = 0; q < m.mean.size(0); ++q) {
      nlohmann::json row = nlohmann::json::array();
      const double* p = m.mean[q].data_ptr<double>();
      for (int64_t k = 0; k < m.mean.size(1); ++k) {
        row.push_back(std::isfinite(p[k]) ? nlohmann::json(p[k])
                                          : nlohmann::json(nullptr));  // -inf: masked
      }
      rows.push_back(row);
    }
    arr.push_back({{"layer", m.layer},
                   {"name", m.name},
                   {"head", m.head},
                   {"weights", rows},
                   {"queries", m.queries},
                   {"keys", m.keys}});
  }
  if (!maps.maps.empty() && !j.contains("tokens"))
    j["tokens"] = maps.maps[0].queries;
  j["maps"] = arr;
  fs::create_directories(dir);
  const std::string path = (fs::path(dir) / "attention.json").string();
  write_file_atomic(path, j.dump() + "\n");
  run_plot("plot_attention.py",
           fmt::format("'{}'", path),
           fmt::format("heatmaps written to {}/attention.png", dir),
           path);
  return path;
}

}  // namespace lengen
