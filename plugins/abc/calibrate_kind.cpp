// One kind of attention calibrated (calibrate_kind.h).
#include "calibrate_kind.h"

#include "lengen/core/log.h"

#include <cmath>

namespace lengen::abc {

namespace {

nlohmann::json matrix(const torch::Tensor& m) {  // [r, c] -> rows, null for -inf / NaN
  auto t = m.to(torch::kFloat64).contiguous();
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t i = 0; i < t.size(0); ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t j = 0; j < t.size(1); ++j) {
      const double v = t[i][j].item<double>();
      row.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr));
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

nlohmann::json calibrate_kind(const std::vector<const AttentionMap*>& heads,
                              bool cross,
                              int64_t rows,
                              const std::string& prefix,
                              const Selection& s,
                              std::vector<std::pair<std::string, torch::Tensor>>& tensors) {
  const std::string kind = cross ? "cross" : "self";
  const auto& dirs = cross ? s.cross_dirs : s.self_dirs;
  if (dirs.empty())
    return nullptr;
  const int64_t full_rows = heads[0]->mean.size(0), keys = heads[0]->mean.size(1);
  const int64_t m = rows > 0 ? std::min(rows, full_rows) : full_rows;
  const int64_t n = cross ? keys : m;  // self: the keys the first m rows can see
  const auto min_rows = static_cast<int64_t>(std::ceil(s.coverage * static_cast<double>(m) - 1e-9));
  KindLines kl;
  std::vector<torch::Tensor> averages, extended;
  nlohmann::json jheads = nlohmann::json::array();
  const auto visible = cross ? torch::Tensor() : torch::ones({m, n}, torch::kBool).tril();
  // [m, n]: cells on keys whose token varies over the samples. The keys are the same
  // tokens for every head of a kind, so the mask is built once from the first head.
  torch::Tensor informative;
  if (s.drop_constant) {
    informative = torch::ones({m, n}, torch::kBool);
    const auto& constant = heads[0]->constant_keys;
    for (int64_t j = 0; j < n && j < static_cast<int64_t>(constant.size()); ++j) {
      if (constant[static_cast<size_t>(j)])
        informative.select(1, j).fill_(false);
    }
  }
  for (const auto* h : heads) {
    auto avg = h->mean.narrow(0, 0, m).narrow(1, 0, n).contiguous();  // [m, n]
    std::vector<Lines> lines;
    for (auto d : dirs) {
      // Self-attention lines stay anchored left: its keys grow while decoding.
      const auto anchor = cross ? s.anchors.at(d) : Anchor::kLeft;
      lines.push_back(average_lines(avg,
                                    visible,
                                    d,
                                    anchor,
                                    cross ? s.sigmas : s.self_sigmas,
                                    s.statistic,
                                    min_rows,
                                    informative));
    }
    if (s.explain_away)
      explain_away(lines, avg, visible, s.statistic, min_rows, informative);
    const bool fell_back =
        s.strongest && keep_strongest(lines, avg, visible, s.statistic, min_rows, informative);
    nlohmann::json jl = nlohmann::json::object();
    for (const auto& l : lines) {
      nlohmann::json kept = nlohmann::json::object();
      for (int64_t k = 0; k < l.count(); ++k) {
        if (std::isfinite(l.bias[static_cast<size_t>(k)]))
          kept[std::to_string(l.first() + k)] = l.bias[static_cast<size_t>(k)];
      }
      jl[direction_name(l.direction)] = {{"anchor", l.anchor == Anchor::kRight ? "right" : "left"},
                                         {"mu", l.mu},
                                         {"sigma", l.sigma},
                                         {"threshold", l.threshold},
                                         {"d_max", l.d_max},
                                         {"kept", kept}};
    }
    auto ext = extend(lines, 0, full_rows, keys, !cross);  // the training sample's size
    averages.push_back(avg);
    extended.push_back(ext);
    jheads.push_back({{"head", h->head},
                      {"average", matrix(avg)},
                      {"extended", matrix(ext)},
                      {"lines", jl},
                      {"fallback", fell_back}});
    kl.heads.push_back(std::move(lines));
    std::string summary;
    for (const auto& l : kl.heads.back()) {
      int64_t kept = 0;
      for (double b : l.bias)
        kept += std::isfinite(b) ? 1 : 0;
      summary += fmt::format(" {} {}", direction_name(l.direction), kept);
    }
    logger("calibrate")
        ->info("{}{} head {}: kept lines:{}{}",
               prefix,
               kind,
               h->head,
               summary,
               fell_back ? " (none passed: its strongest line, empty_heads: strongest)" : "");
  }
  auto t = to_tensors(prefix + kind, kl);
  tensors.insert(tensors.end(), t.begin(), t.end());
  tensors.emplace_back(prefix + kind + ".average", torch::stack(averages));
  tensors.emplace_back(prefix + kind + ".extended", torch::stack(extended));
  return {{"rows", m},
          {"queries", heads[0]->queries},
          {"keys", heads[0]->keys},
          {"constant_keys", heads[0]->constant_keys},
          {"heads", jheads}};
}

}  // namespace lengen::abc
