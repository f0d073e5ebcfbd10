#include "lines.h"

#include "lengen/core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace lengen::abc {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// Per line of `geometry`'s direction: the sum of its visible cells in `a` (rows x cols), their
// count, the count of rows they lie in and of those that are informative (all without `info`).
struct Tally {
  std::vector<double> sum;
  std::vector<int64_t> size, rows, informative;

  double value(size_t k, Statistic statistic) const {
    return statistic == Statistic::kSum ? sum[k] : sum[k] / static_cast<double>(size[k]);
  }

  // May line k be kept, besides the threshold?
  bool eligible(size_t k, int64_t min_rows) const {
    return size[k] > 0 && rows[k] >= min_rows && informative[k] > 0;
  }
};

Tally tally(const Lines& geometry, const double* a, const bool* seen, const bool* info) {
  const auto count = static_cast<size_t>(geometry.count());
  Tally t{std::vector<double>(count, 0.0),
          std::vector<int64_t>(count, 0),
          std::vector<int64_t>(count, 0),
          std::vector<int64_t>(count, 0)};
  std::vector<int64_t> last_row(count, -1);
  for (int64_t i = 0; i < geometry.rows; ++i) {
    for (int64_t j = 0; j < geometry.cols; ++j) {
      const int64_t c = i * geometry.cols + j;
      const double v = a[c];
      if (!std::isfinite(v) || (seen && !seen[c]))
        continue;
      const auto k = static_cast<size_t>(geometry.line_of(i, j, geometry.cols) - geometry.first());
      t.sum[k] += v;
      t.size[k] += 1;
      t.informative[k] += (!info || info[c]) ? 1 : 0;
      if (last_row[k] != i) {
        t.rows[k] += 1;
        last_row[k] = i;
      }
    }
  }
  return t;
}

// `mask` [rows, cols] as a contiguous bool tensor on the CPU (undefined stays undefined).
torch::Tensor cell_mask(const torch::Tensor& mask, int64_t rows, int64_t cols, const char* what) {
  if (!mask.defined())
    return {};
  std::vector<int64_t> shape(mask.sizes().begin(), mask.sizes().end());
  LENGEN_CHECK(mask.dim() == 2 && mask.size(0) == rows && mask.size(1) == cols,
               "abc: the {} mask must be [{}, {}] like the map, got [{}]",
               what,
               rows,
               cols,
               fmt::join(shape, ", "));
  return mask.to(torch::kCPU, torch::kBool).contiguous();
}

const bool* data_or_null(const torch::Tensor& t) {
  return t.defined() ? t.data_ptr<bool>() : nullptr;
}
}  // namespace

const char* direction_name(Direction d) {
  switch (d) {
    case Direction::kDiagonal:
      return "diagonal";
    case Direction::kAntiDiagonal:
      return "anti_diagonal";
    case Direction::kVertical:
      return "vertical";
  }
  return "?";
}

Direction parse_direction(const std::string& s) {
  if (s == "diagonal")
    return Direction::kDiagonal;
  if (s == "anti_diagonal")
    return Direction::kAntiDiagonal;
  if (s == "vertical")
    return Direction::kVertical;
  throw Error(fmt::format(
      "unknown line direction '{}'; known: diagonal (1,1), anti_diagonal (1,-1), vertical (1,0)",
      s));
}

bool Lines::any_kept() const {
  return std::any_of(bias.begin(), bias.end(), [](double b) { return std::isfinite(b); });
}

int64_t Lines::line_of(int64_t i, int64_t j, int64_t N) const {
  const int64_t jj = anchor == Anchor::kRight ? j - (N - cols) : j;  // column in the map's frame
  switch (direction) {
    case Direction::kDiagonal:
      return jj - i;
    case Direction::kVertical:
      return jj + 1;
    case Direction::kAntiDiagonal:
      return cols - 1 - i - jj;  // (n + 1) - (i + j), 1-based
  }
  return 0;
}

Lines average_lines(const torch::Tensor& mean_in,
                    const torch::Tensor& visible,
                    Direction direction,
                    Anchor anchor,
                    double sigmas,
                    Statistic statistic,
                    int64_t min_rows,
                    const torch::Tensor& informative) {
  LENGEN_CHECK(
      mean_in.dim() == 2, "abc: expected an averaged map [m, n], got {} dimensions", mean_in.dim());
  const auto mean = mean_in.to(torch::kCPU, torch::kFloat64).contiguous();
  Lines out;
  out.direction = direction;
  out.anchor = anchor;
  out.rows = mean.size(0);
  out.cols = mean.size(1);
  const auto vis = cell_mask(visible, out.rows, out.cols, "visible");
  const auto info = cell_mask(informative, out.rows, out.cols, "informative");
  const Tally t = tally(out, mean.data_ptr<double>(), data_or_null(vis), data_or_null(info));
  const std::vector<double>& sum = t.sum;
  const std::vector<int64_t>& size = t.size;
  out.mean.assign(sum.size(), std::numeric_limits<double>::quiet_NaN());
  std::vector<double> lines;
  for (size_t k = 0; k < sum.size(); ++k) {
    if (size[k] == 0)
      continue;
    out.mean[k] = t.value(k, statistic);
    lines.push_back(out.mean[k]);
  }
  out.bias.assign(sum.size(), -kInf);
  if (lines.empty())
    return out;
  double mu = 0, var = 0;
  for (double d : lines)
    mu += d;
  mu /= static_cast<double>(lines.size());
  for (double d : lines)
    var += (d - mu) * (d - mu);
  out.mu = mu;
  out.sigma = std::sqrt(var / static_cast<double>(lines.size()));  // population (ddof 0)
  out.threshold = mu + sigmas * out.sigma;
  out.d_max = *std::max_element(lines.begin(), lines.end());
  // d_max over the lines that may be kept, so the strongest kept line's bias is 0 (Algorithm 1).
  double eligible_max = -kInf;
  for (size_t k = 0; k < sum.size(); ++k) {
    if (t.eligible(k, min_rows))
      eligible_max = std::max(eligible_max, out.mean[k]);
  }
  if (std::isfinite(eligible_max))
    out.d_max = eligible_max;
  for (size_t k = 0; k < sum.size(); ++k) {
    if (t.eligible(k, min_rows) && out.mean[k] > out.threshold) {
      out.bias[k] = out.mean[k] - out.d_max;
    }
  }
  return out;
}

namespace {

struct Pick {
  size_t direction = 0, line = 0;
  bool found = false;
};

// The eligible line not yet kept that lies furthest above its direction's mean, in sigmas, over
// the averaged map `a`; with `must_pass`, only lines above their direction's threshold count.
Pick most_outstanding(const std::vector<Lines>& head,
                      const double* a,
                      const bool* seen,
                      const bool* info,
                      Statistic statistic,
                      int64_t min_rows,
                      bool must_pass) {
  Pick pick;
  double best_z = -kInf;
  for (size_t d = 0; d < head.size(); ++d) {
    const Lines& l = head[d];
    if (!(l.sigma > 0))
      continue;  // every line equal: none stands out
    const Tally t = tally(l, a, seen, info);
    for (size_t k = 0; k < t.sum.size(); ++k) {
      if (!t.eligible(k, min_rows) || std::isfinite(l.bias[k]))
        continue;
      const double v = t.value(k, statistic);
      const double z = (v - l.mu) / l.sigma;
      if ((!must_pass || v > l.threshold) && z > best_z) {
        best_z = z;
        pick = {d, k, true};
      }
    }
  }
  return pick;
}

void check_geometry(const std::vector<Lines>& head, const torch::Tensor& map) {
  for (const Lines& l : head) {
    LENGEN_CHECK(l.rows == map.size(0) && l.cols == map.size(1),
                 "abc: lines of a {} x {} map for a {} x {} map",
                 l.rows,
                 l.cols,
                 map.size(0),
                 map.size(1));
  }
}

}  // namespace

void explain_away(std::vector<Lines>& head,
                  const torch::Tensor& mean_in,
                  const torch::Tensor& visible,
                  Statistic statistic,
                  int64_t min_rows,
                  const torch::Tensor& informative) {
  LENGEN_CHECK(
      mean_in.dim() == 2, "abc: expected an averaged map [m, n], got {} dimensions", mean_in.dim());
  auto work = mean_in.to(torch::kCPU, torch::kFloat64).contiguous().clone();
  check_geometry(head, work);
  const auto vis = cell_mask(visible, work.size(0), work.size(1), "visible");
  const auto info = cell_mask(informative, work.size(0), work.size(1), "informative");
  double* a = work.data_ptr<double>();
  for (Lines& l : head)
    std::fill(l.bias.begin(), l.bias.end(), -kInf);
  while (true) {
    const Pick p =
        most_outstanding(head, a, data_or_null(vis), data_or_null(info), statistic, min_rows, true);
    if (!p.found)
      break;
    Lines& kept = head[p.direction];
    kept.bias[p.line] = kept.mean[p.line] - kept.d_max;
    for (int64_t i = 0; i < kept.rows; ++i) {  // its cells are explained: 0 for the next pass
      for (int64_t j = 0; j < kept.cols; ++j) {
        if (static_cast<size_t>(kept.line_of(i, j, kept.cols) - kept.first()) == p.line)
          a[i * kept.cols + j] = 0.0;
      }
    }
  }
}

bool keep_strongest(std::vector<Lines>& head,
                    const torch::Tensor& mean_in,
                    const torch::Tensor& visible,
                    Statistic statistic,
                    int64_t min_rows,
                    const torch::Tensor& informative) {
  if (std::any_of(head.begin(), head.end(), [](const Lines& l) { return l.any_kept(); }))
    return false;
  LENGEN_CHECK(
      mean_in.dim() == 2, "abc: expected an averaged map [m, n], got {} dimensions", mean_in.dim());
  const auto mean = mean_in.to(torch::kCPU, torch::kFloat64).contiguous();
  check_geometry(head, mean);
  const auto vis = cell_mask(visible, mean.size(0), mean.size(1), "visible");
  const auto info = cell_mask(informative, mean.size(0), mean.size(1), "informative");
  const Pick p = most_outstanding(head,
                                  mean.data_ptr<double>(),
                                  data_or_null(vis),
                                  data_or_null(info),
                                  statistic,
                                  min_rows,
                                  false);
  if (!p.found)
    return false;
  Lines& kept = head[p.direction];
  kept.bias[p.line] = kept.mean[p.line] - kept.d_max;
  return true;
}

torch::Tensor extend(
    const std::vector<Lines>& head, int64_t row0, int64_t M, int64_t N, bool causal) {
  auto out = torch::zeros({M, N}, torch::kFloat64);
  const bool transparent =
      std::none_of(head.begin(), head.end(), [](const Lines& l) { return l.any_kept(); });
  if (transparent)
    return out;
  double* o = out.data_ptr<double>();
  std::fill(o, o + M * N, -kInf);
  for (const Lines& lines : head) {
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        const int64_t k = lines.line_of(row0 + i, j, N) - lines.first();
        if (k < 0 || k >= lines.count())
          continue;  // the line does not cross the map
        o[i * N + j] = std::max(o[i * N + j], lines.bias[static_cast<size_t>(k)]);
      }
    }
  }
  for (int64_t i = 0; i < M; ++i) {
    const int64_t seen = causal ? std::min(N, row0 + i + 1) : N;  // columns row i may attend to
    if (std::none_of(o + i * N, o + i * N + seen, [](double v) { return std::isfinite(v); })) {
      std::fill(o + i * N, o + (i + 1) * N, 0.0);
    }
  }
  return out;
}

}  // namespace lengen::abc
