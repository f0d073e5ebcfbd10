// The grid evaluation: samples each cell, decides each sample (teacher-forced, decoded, or by
// the final answer) and counts it.
#include "lengen/eval/evaluator.h"

#include "batch_plan.h"

#include "lengen/core/error.h"
#include "lengen/core/fault.h"
#include "lengen/core/rng.h"
#include "lengen/core/torch_compat.h"
#include "lengen/eval/decode.h"
#include "lengen/model/architecture.h"
#include "lengen/model/batch.h"

#include <algorithm>
#include <chrono>

namespace lengen {

Example answer_only(const Example& ex) {
  LENGEN_CHECK(ex.answer_begin >= ex.prompt_length && ex.answer_begin < ex.length(),
               "answer_only: answer_begin {} is outside the response [{}, {})",
               ex.answer_begin,
               ex.prompt_length,
               ex.length());
  Example out = ex;
  std::fill(out.loss_mask.begin(), out.loss_mask.end(), 0);
  for (int64_t t = ex.answer_begin; t + 1 < ex.length(); ++t) {
    out.loss_mask[static_cast<size_t>(t)] = 1;
  }
  return out;
}

bool answer_match(const Example& ex,
                  const std::vector<int64_t>& response,
                  int64_t eos,
                  int64_t separator) {
  auto end = std::find(response.begin(), response.end(), eos);
  if (end == response.end()) {
    return false;
  }
  const auto n = static_cast<std::ptrdiff_t>(ex.length() - 1 - ex.answer_begin);
  if (end - response.begin() < n ||
      !std::equal(end - n, end, ex.tokens.begin() + ex.answer_begin)) {
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

// Whether the evaluation decodes: asked for, the answer metric (a wrong scratchpad is visible
// only to a decode), or an output that needs the responses (breakdown, kept samples).
static bool decodes(const EvalConfig& cfg) {
  return cfg.greedy_decode || cfg.metric == "answer" || !cfg.breakdown.empty() || cfg.examples > 0;
}

std::string metric_description(const EvalConfig& cfg) {
  const char* how =
      decodes(cfg) ? "under greedy decoding" : "teacher-forced (equal to greedy decoding)";
  if (cfg.metric == "answer") {
    return "exact match of the final answer (tokens before EOS) under greedy decoding";
  }
  if (cfg.metric == "answer_given_scratchpad") {
    return "exact match of the final answer given the reference scratchpad, teacher-forced "
           "(not a decoding metric)";
  }
  return fmt::format("exact match of the whole response {}", how);
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

std::vector<Example> cell_samples(const Task& task, const EvalConfig& cfg, const GridCell& cell) {
  uint64_t seed = cfg.seed;
  for (const auto& [axis, v] : cell) {
    seed = mix_seed(seed, {static_cast<uint64_t>(v)});
  }
  Rng rng(seed);
  std::vector<Example> examples;
  examples.reserve(static_cast<size_t>(cfg.samples));
  for (int64_t i = 0; i < cfg.samples; ++i) {
    examples.push_back(task.sample_eval(cell, rng));
  }
  return examples;
}

namespace {

// eval.examples: the first `keep` wrong samples in sampling order, then right ones to fill the
// count. decoded[i]: sample i's verdict and response.
std::vector<SampleRecord> kept_examples(
    const Task& task,
    const std::vector<Example>& examples,
    const std::vector<std::pair<bool, std::vector<int64_t>>>& decoded,
    size_t keep) {
  std::vector<SampleRecord> out;
  for (const bool want : {false, true}) {
    for (size_t i = 0; i < decoded.size() && out.size() < keep; ++i) {
      if (decoded[i].first != want) {
        continue;
      }
      const Example& ex = examples[i];
      const std::vector<int64_t> prompt(ex.tokens.begin(), ex.tokens.begin() + ex.prompt_length);
      out.push_back({task.render(prompt),
                     task.render(ex.response()),
                     task.render(decoded[i].second),
                     want,
                     ex.meta});
    }
  }
  return out;
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
  const compat::CudaAutocast autocast(cfg.autocast && device.is_cuda());
  for (size_t ci = 0; ci < cells.size(); ++ci) {
    const GridCell& cell = cells[ci];
    fault::reached("eval.cell");
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Example> examples = cell_samples(task, cfg, cell);
    // The answer of a decode may follow a wrong scratchpad, which teacher forcing cannot see:
    // the answer metric always decodes (Cho et al.: "we only use greedy decoding").
    const bool answer = cfg.metric == "answer";
    const bool given_scratchpad = cfg.metric == "answer_given_scratchpad";
    int64_t correct = 0;
    std::map<std::pair<int64_t, int64_t>, int64_t> first_errors;
    const bool breakdown = !cfg.breakdown.empty();
    CellAnalysis analysis;
    // eval.examples: each sample's verdict and response, kept by its index in the cell.
    const auto keep = static_cast<size_t>(cfg.examples);
    std::vector<std::pair<bool, std::vector<int64_t>>> decoded(keep > 0 ? examples.size() : 0);
    if (decodes(cfg)) {
      // A cell's counts do not depend on the order, so decode sorted by length too.
      const BatchPlan plan(examples, cfg.batch_size, cfg.batch_tokens, device, model);
      for (const auto& batch : plan.batches) {
        std::vector<Example> chunk = plan.chunk(examples, batch);
        const size_t first = batch.first;
        auto responses = decode(model, task, chunk, device);
        for (size_t i = 0; i < chunk.size(); ++i) {
          const Example& ex = chunk[i];
          const auto& resp = responses[i];
          const bool ok =
              answer
                  ? answer_match(
                        ex, resp, task.vocabulary().eos(), answer_separator(ex, task.vocabulary()))
                  : task.exact_match(ex, resp);
          if (breakdown) {
            analysis.add(ex.meta, cfg.breakdown, ok, ex.response(), resp);
          }
          if (keep > 0) {
            decoded[plan.order[first + i]] = {ok, resp};
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
      auto errors = teacher_forced_first_errors(
          model, task, examples, device, cfg.batch_size, cfg.batch_tokens);
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
    r.examples = kept_examples(task, examples, decoded, keep);
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

}  // namespace lengen
