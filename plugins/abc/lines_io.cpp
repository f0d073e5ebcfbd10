// The file format of calibrated lines (docs/abc.md): to_tensors writes a kind's lines as
// tensors for abc.safetensors, from_tensors reads them back (lines.h).
#include "lines.h"

#include "lengen/core/error.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace lengen::abc {

std::vector<std::pair<std::string, torch::Tensor>> to_tensors(const std::string& prefix,
                                                              const KindLines& lines) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  if (lines.empty())
    return out;
  const size_t dirs = lines.heads[0].size();
  const auto H = static_cast<int64_t>(lines.heads.size());
  for (size_t d = 0; d < dirs; ++d) {
    const Lines& l0 = lines.heads[0][d];
    const std::string name = prefix + "." + direction_name(l0.direction);
    auto mean = torch::empty({H, l0.count()}, torch::kFloat64);
    auto bias = torch::empty({H, l0.count()}, torch::kFloat64);
    auto stats = torch::empty({H, 4}, torch::kFloat64);
    for (int64_t h = 0; h < H; ++h) {
      const Lines& l = lines.heads[static_cast<size_t>(h)][d];
      LENGEN_CHECK(l.direction == l0.direction && l.count() == l0.count(),
                   "abc: heads disagree on their lines");
      std::copy(l.mean.begin(), l.mean.end(), mean[h].data_ptr<double>());
      std::copy(l.bias.begin(), l.bias.end(), bias[h].data_ptr<double>());
      const double st[4] = {l.mu, l.sigma, l.threshold, l.d_max};
      std::copy(st, st + 4, stats[h].data_ptr<double>());
    }
    out.emplace_back(name + ".mean", mean);
    out.emplace_back(name + ".bias", bias);
    out.emplace_back(
        name + ".info",
        torch::tensor({l0.rows, l0.cols, int64_t{l0.anchor == Anchor::kRight ? 1 : 0}, int64_t{0}},
                      torch::kInt64));
    out.emplace_back(name + ".stats", stats);
  }
  return out;
}

KindLines from_tensors(const std::string& prefix,
                       const std::vector<std::pair<std::string, torch::Tensor>>& tensors) {
  auto find = [&](const std::string& name) -> torch::Tensor {
    for (const auto& [n, t] : tensors) {
      if (n == name)
        return t;
    }
    return {};
  };
  KindLines out;
  for (Direction d : {Direction::kDiagonal, Direction::kAntiDiagonal, Direction::kVertical}) {
    const std::string name = prefix + "." + direction_name(d);
    auto mean = find(name + ".mean"), bias = find(name + ".bias"), info = find(name + ".info"),
         stats = find(name + ".stats");
    if (!bias.defined())
      continue;
    LENGEN_CHECK(mean.defined() && info.defined() && stats.defined() && bias.dim() == 2 &&
                     mean.sizes() == bias.sizes() && info.numel() == 4 &&
                     stats.size(0) == bias.size(0),
                 "abc: the tensors of {} are incomplete or malformed",
                 name);
    mean = mean.to(torch::kFloat64).contiguous();
    bias = bias.to(torch::kFloat64).contiguous();
    stats = stats.to(torch::kFloat64).contiguous();
    info = info.to(torch::kInt64);
    if (out.heads.empty())
      out.heads.resize(static_cast<size_t>(bias.size(0)));
    LENGEN_CHECK(static_cast<int64_t>(out.heads.size()) == bias.size(0),
                 "abc: {} has {} heads, other directions {}",
                 name,
                 bias.size(0),
                 out.heads.size());
    for (int64_t h = 0; h < bias.size(0); ++h) {
      Lines l;
      l.direction = d;
      l.rows = info[0].item<int64_t>();
      l.cols = info[1].item<int64_t>();
      l.anchor = info[2].item<int64_t>() == 1 ? Anchor::kRight : Anchor::kLeft;
      LENGEN_CHECK(l.count() == bias.size(1),
                   "abc: {} holds {} lines where a {} x {} map has {}",
                   name,
                   bias.size(1),
                   l.rows,
                   l.cols,
                   l.count());
      l.mean.assign(mean[h].data_ptr<double>(), mean[h].data_ptr<double>() + l.count());
      l.bias.assign(bias[h].data_ptr<double>(), bias[h].data_ptr<double>() + l.count());
      const double* st = stats[h].data_ptr<double>();
      l.mu = st[0], l.sigma = st[1], l.threshold = st[2], l.d_max = st[3];
      out.heads[static_cast<size_t>(h)].push_back(std::move(l));
    }
  }
  return out;
}

}  // namespace lengen::abc
