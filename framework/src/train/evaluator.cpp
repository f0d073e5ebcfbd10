#include "lengen/train/evaluator.h"

#include "lengen/core/error.h"
#include "lengen/core/rng.h"
#include "lengen/train/batch.h"
#include "lengen/train/checkpoint.h"
#include "lengen/train/objective.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>

namespace fs = std::filesystem;

namespace lengen {

std::pair<double, double> wilson_interval(int64_t k, int64_t n) {
  if (n <= 0) {
    return {0.0, 1.0};
  }
  const double z = 1.959963984540054;
  const double p = static_cast<double>(k) / static_cast<double>(n);
  const double nn = static_cast<double>(n);
  const double denom = 1 + z * z / nn;
  const double centre = (p + z * z / (2 * nn)) / denom;
  const double half = z * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / denom;
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

Example answer_only(const Example& ex) {
  LENGEN_CHECK(ex.answer_begin >= ex.prompt_length && ex.answer_begin < ex.length(),
               "answer_only: answer_begin {} is outside the response [{}, {})", ex.answer_begin,
               ex.prompt_length, ex.length());
  Example out = ex;
  std::fill(out.loss_mask.begin(), out.loss_mask.end(), 0);
  for (int64_t t = ex.answer_begin; t + 1 < ex.length(); ++t) {
    out.loss_mask[static_cast<size_t>(t)] = 1;
  }
  return out;
}

bool answer_match(const Example& ex, const std::vector<int64_t>& response, int64_t eos, int64_t separator) {
  auto end = std::find(response.begin(), response.end(), eos);
  if (end == response.end()) {
    return false;
  }
  const auto n = static_cast<std::ptrdiff_t>(ex.length() - 1 - ex.answer_begin);
  if (end - response.begin() < n || !std::equal(end - n, end, ex.tokens.begin() + ex.answer_begin)) {
    return false;
  }
  // With a separator: nothing but the answer between the last separator and EOS.
  return separator < 0 || (end - n != response.begin() && *(end - n - 1) == separator);
}

// The separator before the reference answer: a non-digit token just before it in the response
// ('>' of a scratchpad), else -1 (parity's answer follows a scratchpad digit).
static int64_t answer_separator(const Example& ex, const Vocabulary& vocab) {
  if (ex.answer_begin <= ex.prompt_length) {
    return -1;
  }
  const int64_t tok = ex.tokens[static_cast<size_t>(ex.answer_begin - 1)];
  const std::string& s = vocab.token(tok);
  return s.size() == 1 && s[0] >= '0' && s[0] <= '9' ? -1 : tok;
}

std::string metric_description(const EvalConfig& cfg) {
  const char* how = cfg.greedy_decode || !cfg.breakdown.empty()
                        ? "under greedy decoding"
                        : "teacher-forced (equal to greedy decoding)";
  if (cfg.metric == "answer") {
    return "exact match of the final answer (tokens before EOS) under greedy decoding";
  }
  if (cfg.metric == "answer_given_scratchpad") {
    return "exact match of the final answer given the reference scratchpad, teacher-forced "
           "(not a decoding metric)";
  }
  return fmt::format("exact match of the whole response {}", how);
}

std::vector<std::pair<size_t, size_t>> eval_batches(const std::vector<int64_t>& lengths,
                                                    int64_t max_sequences,
                                                    int64_t max_tokens) {
  LENGEN_CHECK(max_sequences >= 1, "eval_batches: max_sequences must be >= 1, got {}", max_sequences);
  std::vector<std::pair<size_t, size_t>> out;
  size_t begin = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    LENGEN_CHECK(i == 0 || lengths[i - 1] <= lengths[i], "eval_batches: lengths must be ascending");
    const auto count = static_cast<int64_t>(i + 1 - begin);
    const bool full = count > max_sequences || (max_tokens > 0 && count > 1 && count * lengths[i] > max_tokens);
    if (full) {
      out.emplace_back(begin, i);
      begin = i;
    }
  }
  if (begin < lengths.size()) {
    out.emplace_back(begin, lengths.size());
  }
  return out;
}

int64_t eval_batch_tokens(int64_t configured, const torch::Device& device, const ModelConfig& model) {
  if (configured > 0) {
    return configured;
  }
  if (!device.is_cpu()) {
    return kGpuEvalBatchTokens;
  }
  const int64_t ff_inputs = make_activation(model.activation)->inputs();
  const int64_t widest = std::max({3 * model.heads * model.head_dim(), ff_inputs * model.d_ff,
                                   int64_t{256} * model.heads});
  return std::max<int64_t>(1, kCpuEvalBatchBytes / (4 * widest));
}

namespace {

// The order that sorts examples by length (stable) and its batches (eval_batches, the token
// cap resolved by eval_batch_tokens).
struct BatchPlan {
  std::vector<size_t> order;
  std::vector<std::pair<size_t, size_t>> batches;

  BatchPlan(const std::vector<Example>& examples, int64_t batch_size, int64_t batch_tokens,
            const torch::Device& device, Transformer& model)
      : order(examples.size()) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return examples[a].length() < examples[b].length(); });
    std::vector<int64_t> lengths;
    lengths.reserve(examples.size());
    for (size_t i : order) {
      lengths.push_back(examples[i].length());
    }
    batches = eval_batches(lengths, batch_size, eval_batch_tokens(batch_tokens, device, model->config()));
  }

  // The examples of one batch, in its order.
  std::vector<Example> chunk(const std::vector<Example>& examples, const std::pair<size_t, size_t>& batch) const {
    std::vector<Example> out;
    out.reserve(batch.second - batch.first);
    for (size_t i = batch.first; i < batch.second; ++i) {
      out.push_back(examples[order[i]]);
    }
    return out;
  }
};

}  // namespace

std::vector<FirstError> teacher_forced_first_errors(Transformer& model,
                                                    const Task& task,
                                                    const std::vector<Example>& examples,
                                                    const torch::Device& device,
                                                    int64_t batch_size,
                                                    int64_t batch_tokens) {
  torch::NoGradGuard no_grad;
  model->eval();
  auto objective = objective_for(model);
  std::vector<FirstError> out(examples.size());
  // Sorted by length so that a batch pads little.
  const BatchPlan plan(examples, batch_size, batch_tokens, device, model);
  const auto& order = plan.order;
  for (const auto& batch : plan.batches) {
    const auto [begin, end] = batch;
    std::vector<Example> chunk = plan.chunk(examples, batch);
    Batch b = objective->make_batch(task, chunk).to(device);
    // Only the positions from the first scored one on (no target before it is checked).
    const int64_t from = b.first_scored, rows = b.targets.size(1) - from;
    auto logits = objective->scored_logits(model, b);                   // [B, rows, V]
    auto targets = b.targets.narrow(1, from, rows);                      // [B, rows]
    auto pred = logits.argmax(-1);                                       // [B, rows]
    auto wrong = (pred != targets).logical_and(b.mask.narrow(1, from, rows) != 0);  // [B, rows]
    auto any = wrong.any(1);                                             // [B]
    auto first = wrong.to(torch::kInt64).argmax(1);                      // [B] first true
    auto expected = targets.gather(1, first.unsqueeze(1)).squeeze(1);    // [B]
    auto predicted = pred.gather(1, first.unsqueeze(1)).squeeze(1);      // [B]
    auto cpu = torch::stack({any.to(torch::kInt64), first + from, expected, predicted}).to(torch::kCPU);
    auto acc = cpu.accessor<int64_t, 2>();                               // [4, B]
    for (size_t i = begin; i < end; ++i) {
      const auto j = static_cast<int64_t>(i - begin);
      if (acc[0][j] != 0) {
        out[order[i]] = FirstError{acc[1][j], acc[2][j], acc[3][j]};
      }
    }
  }
  return out;
}

std::vector<bool> teacher_forced_exact_match(Transformer& model,
                                             const Task& task,
                                             const std::vector<Example>& examples,
                                             const torch::Device& device,
                                             int64_t batch_size,
                                             int64_t batch_tokens) {
  auto errors = teacher_forced_first_errors(model, task, examples, device, batch_size, batch_tokens);
  std::vector<bool> out(errors.size());
  for (size_t i = 0; i < errors.size(); ++i) {
    out[i] = errors[i].position < 0;
  }
  return out;
}

namespace {

// (expected, predicted) at the first token where a generated response leaves the reference
// response; -1 where one of them has already ended.
std::pair<int64_t, int64_t> first_divergence(const Example& ex, const std::vector<int64_t>& resp) {
  const auto ref_begin = ex.tokens.begin() + ex.prompt_length;
  const size_t ref_len = static_cast<size_t>(ex.tokens.end() - ref_begin);
  for (size_t i = 0; i < std::max(ref_len, resp.size()); ++i) {
    const int64_t want = i < ref_len ? *(ref_begin + static_cast<std::ptrdiff_t>(i)) : -1;
    const int64_t got = i < resp.size() ? resp[i] : -1;
    if (want != got) {
      return {want, got};
    }
  }
  return {-1, -1};
}

std::string token_name(const Task& task, int64_t id) {
  return id < 0 ? "(none)" : task.vocabulary().token(id);
}

}  // namespace

std::vector<CellResult> evaluate_grid(
    Transformer& model,
    const Task& task,
    const EvalConfig& cfg,
    const torch::Device& device,
    const std::function<void(const CellResult&, size_t, size_t)>& progress) {
  std::vector<GridCell> cells = cfg.cells();
  std::vector<CellResult> results;
  // eval.loops: a looped model applied more (or fewer) times than in training;
  // eval.adaptive_loops: up to that many more, keeping each sample's most confident loop.
  struct LoopsGuard {
    Transformer& m;
    int64_t saved, saved_adaptive;
    ~LoopsGuard() {
      m->set_loops(saved);
      m->set_adaptive_loops(saved_adaptive);
    }
  } loops_guard{model, model->loops(), model->adaptive_loops()};
  if (cfg.loops > 0) {
    model->set_loops(cfg.loops);
  }
  model->set_adaptive_loops(cfg.adaptive_loops);
  for (size_t ci = 0; ci < cells.size(); ++ci) {
    const GridCell& cell = cells[ci];
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<uint64_t> labels;
    for (const auto& [axis, v] : cell) {
      labels.push_back(static_cast<uint64_t>(v));
    }
    uint64_t s = cfg.seed;
    for (uint64_t l : labels) {
      s = mix_seed(s, {l});
    }
    Rng rng(s);
    std::vector<Example> examples;
    examples.reserve(static_cast<size_t>(cfg.samples));
    for (int64_t i = 0; i < cfg.samples; ++i) {
      examples.push_back(task.sample_eval(cell, rng));
    }
    // The answer of a decode may follow a wrong scratchpad, which teacher forcing cannot see:
    // the answer metric always decodes (Cho et al.: "we only use greedy decoding").
    const bool answer = cfg.metric == "answer";
    const bool given_scratchpad = cfg.metric == "answer_given_scratchpad";
    int64_t correct = 0;
    std::map<std::pair<int64_t, int64_t>, int64_t> first_errors;
    const bool breakdown = !cfg.breakdown.empty();
    CellAnalysis analysis;
    if (cfg.greedy_decode || answer || breakdown) {
      auto objective = objective_for(model);
      // A cell's counts do not depend on the order, so decode sorted by length too.
      const BatchPlan plan(examples, cfg.batch_size, cfg.batch_tokens, device, model);
      for (const auto& batch : plan.batches) {
        std::vector<Example> chunk = plan.chunk(examples, batch);
        auto responses = objective->decode(model, task, chunk, device);
        for (size_t i = 0; i < chunk.size(); ++i) {
          const Example& ex = chunk[i];
          const auto& resp = responses[i];
          const bool ok = answer ? answer_match(ex, resp, task.vocabulary().eos(),
                                                answer_separator(ex, task.vocabulary()))
                                 : task.exact_match(ex, resp);
          if (breakdown) {
            analysis.add(ex.meta, cfg.breakdown, ok, ex.response(), resp);
          }
          if (ok) {
            ++correct;
          } else {
            // A wrong answer implies a wrong response, so this is a real disagreement.
            ++first_errors[first_divergence(ex, resp)];
          }
        }
      }
    } else {
      if (given_scratchpad) {
        for (auto& ex : examples) {
          ex = answer_only(ex);
        }
      }
      auto errors = teacher_forced_first_errors(model, task, examples, device, cfg.batch_size, cfg.batch_tokens);
      for (const auto& err : errors) {
        if (err.position < 0) {
          ++correct;
        } else {
          ++first_errors[{err.expected, err.predicted}];
        }
      }
    }
    CellResult r;
    r.cell = cell;
    r.samples = cfg.samples;
    r.correct = correct;
    r.analysis = std::move(analysis);
    for (const auto& [tokens, n] : first_errors) {
      r.first_errors[{token_name(task, tokens.first), token_name(task, tokens.second)}] += n;
    }
    r.accuracy = static_cast<double>(correct) / static_cast<double>(cfg.samples);
    std::tie(r.ci_low, r.ci_high) = wilson_interval(correct, cfg.samples);
    for (const auto& ex : examples) {
      r.tokens += ex.length();
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    results.push_back(r);
    if (progress) {
      progress(r, ci + 1, cells.size());
    }
  }
  return results;
}

void CellAnalysis::add(const std::map<std::string, int64_t>& features,
                       const std::vector<std::string>& wanted,
                       bool correct,
                       const std::vector<int64_t>& reference,
                       const std::vector<int64_t>& response) {
  for (const auto& f : wanted) {
    auto it = features.find(f);
    LENGEN_CHECK(it != features.end(), "eval.breakdown: the task wrote no feature '{}' for this example", f);
    auto& [n, k] = by_feature[f][it->second];
    ++n;
    k += correct ? 1 : 0;
  }
  int64_t wrong = 0, where = -1;
  const size_t len = std::max(reference.size(), response.size());
  for (size_t i = 0; i < len; ++i) {
    const bool same = i < reference.size() && i < response.size() && reference[i] == response[i];
    if (!same) {
      ++wrong;
      where = static_cast<int64_t>(i);
      ++error_positions[where];
    }
  }
  if (!correct) {
    ++wrong_tokens[wrong];
    if (wrong == 1) {
      ++single_error_position[where];
    }
  }
}

static nlohmann::json analysis_json(const CellAnalysis& a) {
  auto histogram = [](const std::map<int64_t, int64_t>& h) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [k, n] : h) {
      out.push_back({k, n});
    }
    return out;
  };
  nlohmann::json j;
  j["by_feature"] = nlohmann::json::object();
  for (const auto& [feature, values] : a.by_feature) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& [value, nk] : values) {
      rows.push_back({{"value", value}, {"samples", nk.first}, {"correct", nk.second},
                      {"accuracy", static_cast<double>(nk.second) / static_cast<double>(nk.first)}});
    }
    j["by_feature"][feature] = rows;
  }
  j["wrong_tokens"] = histogram(a.wrong_tokens);                    // [count, samples]
  j["single_error_position"] = histogram(a.single_error_position);  // [position, samples]
  j["error_positions"] = histogram(a.error_positions);              // [position, samples]
  return j;
}

TrainedRanges trained_ranges(const std::vector<GridAxis>& axes) {
  TrainedRanges out;
  for (const auto& a : axes) {
    if (a.train_hi > 0) {
      out[a.name] = {a.train_lo, a.train_hi};
    }
  }
  return out;
}

void write_grid_results(const std::string& dir,
                        const std::vector<CellResult>& results,
                        const std::vector<std::string>& axes,
                        const std::string& metric,
                        const TrainedRanges& trained) {
  std::string csv;
  for (const auto& a : axes) {
    csv += a + ",";
  }
  csv += "samples,correct,accuracy,ci_low,ci_high\n";
  nlohmann::json cells = nlohmann::json::array();
  int64_t total = 0, total_correct = 0;
  std::string breakdown_csv;
  for (const auto& a : axes) {
    breakdown_csv += a + ",";
  }
  breakdown_csv += "feature,value,samples,correct,accuracy\n";
  bool any_analysis = false;
  for (const auto& r : results) {
    any_analysis = any_analysis || !r.analysis.empty();
  }
  for (const auto& r : results) {
    nlohmann::json c;
    for (const auto& a : axes) {
      csv += fmt::format("{},", r.cell.at(a));
      c[a] = r.cell.at(a);
    }
    csv += fmt::format("{},{},{:.6f},{:.6f},{:.6f}\n", r.samples, r.correct, r.accuracy, r.ci_low,
                       r.ci_high);
    c["samples"] = r.samples;
    c["correct"] = r.correct;
    c["accuracy"] = r.accuracy;
    c["ci95"] = {r.ci_low, r.ci_high};
    c["tokens"] = r.tokens;
    c["seconds"] = r.seconds;
    // The most frequent first errors, most frequent first (what a failing cell gets wrong).
    std::vector<std::pair<int64_t, std::pair<std::string, std::string>>> errs;
    for (const auto& [tokens, n] : r.first_errors) {
      errs.emplace_back(n, tokens);
    }
    std::stable_sort(errs.begin(), errs.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    c["first_errors"] = nlohmann::json::array();
    for (size_t i = 0; i < std::min<size_t>(errs.size(), 5); ++i) {
      c["first_errors"].push_back({{"expected", errs[i].second.first},
                                   {"predicted", errs[i].second.second},
                                   {"samples", errs[i].first}});
    }
    if (!r.analysis.empty()) {
      c["analysis"] = analysis_json(r.analysis);
      for (const auto& [feature, values] : r.analysis.by_feature) {
        for (const auto& [value, nk] : values) {
          for (const auto& a : axes) {
            breakdown_csv += fmt::format("{},", r.cell.at(a));
          }
          breakdown_csv += fmt::format("{},{},{},{},{:.6f}\n", feature, value, nk.first, nk.second,
                                       static_cast<double>(nk.second) / static_cast<double>(nk.first));
        }
      }
    }
    cells.push_back(c);
    total += r.samples;
    total_correct += r.correct;
  }
  nlohmann::json summary{{"axes", axes},
                         {"cells", cells},
                         {"samples", total},
                         {"mean_accuracy", total ? static_cast<double>(total_correct) / total : 0.0},
                         {"metric", metric}};
  summary["trained"] = nlohmann::json::object();
  for (const auto& [axis, range] : trained) {
    summary["trained"][axis] = {range.first, range.second};
  }
  write_file_atomic((fs::path(dir) / "grid.csv").string(), csv);
  if (any_analysis) {
    write_file_atomic((fs::path(dir) / "breakdown.csv").string(), breakdown_csv);
  }
  write_file_atomic((fs::path(dir) / "summary.json").string(), summary.dump(2) + "\n");
}

}  // namespace lengen
