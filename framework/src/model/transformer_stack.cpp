// Running a Transformer's stacks: each block applied loops x depth times (with a loop count per
// sample for a one-pass stack), and the names of those applications (attention maps, probes).
#include "lengen/core/error.h"
#include "lengen/model/transformer.h"

namespace lengen {

namespace {

// The name of one application of a stack's block: "blocks.1", "encoder.0.cross", with "@<loop>"
// when the stack loops. attention_names() and the probe's sites both spell it so.
std::string application_name(
    const char* stack, int64_t layer, const char* suffix, int64_t loop, int64_t loops) {
  return fmt::format("{}.{}{}{}", stack, layer, suffix, loops > 1 ? fmt::format("@{}", loop) : "");
}

}  // namespace

std::vector<std::string> TransformerImpl::attention_names() const {
  std::vector<std::string> out;
  auto add = [&](const char* prefix, int64_t depth, const char* suffix) {
    for (int64_t loop = 0; loop < loops_; ++loop) {
      for (int64_t l = 0; l < depth; ++l) {
        out.push_back(application_name(prefix, l, suffix, loop, loops_));
      }
    }
  };
  for (const auto& s : stacks_) {
    add(s.name.c_str(), s.depth, "");
    if (s.cross) {
      add(s.name.c_str(), s.depth, ".cross");
    }
  }
  return out;
}

torch::Tensor TransformerImpl::run_stack(size_t stack,
                                         torch::Tensor x,
                                         const AttentionInputs& self,
                                         const AttentionInputs& cross,
                                         KVCache* cache,
                                         std::vector<torch::Tensor>* attention,
                                         int64_t rows_from) {
  const StackSpec& spec = stacks_.at(stack);
  const int64_t depth = spec.depth;
  const bool with_cross = spec.cross;
  // Its maps come after every earlier stack's (attention_names()).
  size_t attention_offset = 0;
  for (size_t j = 0; j < stack; ++j) {
    attention_offset += static_cast<size_t>(stacks_[j].depth * loops_ * (stacks_[j].cross ? 2 : 1));
  }
  const torch::Tensor x0 = x;  // [B, T, C]
  const size_t apps = static_cast<size_t>(depth * loops_);
  if (cache) {
    cache->keys.resize(apps);
    cache->values.resize(apps);
    if (with_cross) {
      cache->cross_keys.resize(apps);
      cache->cross_values.resize(apps);
    }
  }
  size_t app = 0;
  for (int64_t loop = 0; loop < loops_; ++loop) {
    if (loop > 0 && cfg_.input_injection) {
      x = x + x0;  // [B, T, C]
    }
    for (int64_t l = 0; l < depth; ++l, ++app) {
      AttentionInputs s = self, c = cross;
      if (cache) {
        s.cache_k = &cache->keys[app];
        s.cache_v = &cache->values[app];
        if (with_cross) {
          c.cache_k = &cache->cross_keys[app];
          c.cache_v = &cache->cross_values[app];
        }
      }
      if (attention) {
        s.attn_out = &(*attention)[attention_offset + app];
        s.scores = attention_scores_;
        if (with_cross) {
          c.attn_out = &(*attention)[attention_offset + apps + app];
          c.scores = attention_scores_;
        }
      }
      if (app + 1 == apps) {
        s.rows_from = rows_from;  // the last application: only the wanted rows
      }
      std::string site;
      if (probe_) {  // names as attention_names() gives them
        const char* name = spec.name.c_str();
        site = application_name(name, l, "", loop, loops_);
        s.probe = c.probe = probe_.get();
        s.site = site;
        c.site = application_name(name, l, ".cross", loop, loops_);
      }
      auto block = stack_modules_[stack]->ptr<BlockImpl>(cfg_.shared_layers ? 0 : l);
      x = block->forward(x, s, c);  // [B, T, C]
      if (probe_) {
        x = probe_->visit(site, x);  // [B, T, C]
      }
    }
  }
  return x;
}

torch::Tensor TransformerImpl::run_stack_per_sample(size_t stack,
                                                    torch::Tensor x,
                                                    const AttentionInputs& self,
                                                    const torch::Tensor& host_loops,
                                                    const torch::Tensor& labelled,
                                                    bool adaptive,
                                                    int64_t rows_from) {
  const int64_t depth = stacks_.at(stack).depth, B = x.size(0), T = x.size(1);
  const int64_t most = host_loops.max().item<int64_t>();  // a host tensor: no device read
  const torch::Tensor loops = host_loops.to(x.device());  // [B]
  const torch::Tensor x0 = x;                             // [B, T, C]
  // Per-loop logits are read on every loop, so only a non-adaptive pass narrows its last one.
  const int64_t last_rows_from = adaptive ? 0 : rows_from;
  torch::Tensor best, best_score;  // [B, T', V], [B]
  torch::Tensor scored;            // [B, T'] labelled rows of the logits
  if (adaptive) {
    scored = labelled.defined()
                 ? labelled.narrow(1, rows_from, T - rows_from).to(torch::kFloat32)
                 : torch::ones({B, T - rows_from}, x.options().dtype(torch::kFloat32));
  }
  for (int64_t loop = 0; loop < most; ++loop) {
    const torch::Tensor start = x;  // [B, T, C]
    if (loop > 0 && cfg_.input_injection) {
      x = x + x0;
    }
    for (int64_t l = 0; l < depth; ++l) {
      AttentionInputs s = self;
      if (loop + 1 == most && l + 1 == depth) {
        s.rows_from = last_rows_from;
      }
      x = stack_modules_[stack]
              ->ptr<BlockImpl>(cfg_.shared_layers ? 0 : l)
              ->forward(x, s, {});  // [B, T', C]
    }
    // A sample past its own loop count keeps its state.
    const int64_t from = x.size(1) == T ? 0 : last_rows_from;
    const auto running = (loops > loop).view({B, 1, 1});             // [B, 1, 1]
    x = torch::where(running, x, start.narrow(1, from, x.size(1)));  // [B, T', C]
    if (adaptive) {
      auto logits = head(x.narrow(1, rows_from, T - rows_from));  // [B, T - rows_from, V]
      // Cross-entropy of the output against its own argmax: -log p(argmax) = logsumexp - max.
      auto lf = logits.to(torch::kFloat32);
      auto surprise = torch::logsumexp(lf, -1) - std::get<0>(lf.max(-1));  // [B, T']
      auto score = (surprise * scored).sum(1);                             // [B]
      if (!best.defined()) {
        best = logits;
        best_score = score;
      } else {
        const auto better = score < best_score;  // [B]; ties keep the earlier loop
        best = torch::where(better.view({B, 1, 1}), logits, best);
        best_score = torch::where(better, score, best_score);
      }
    }
  }
  if (adaptive) {
    return best;  // [B, T - rows_from, V]
  }
  return head(x);  // [B, T - rows_from, V]
}

}  // namespace lengen
