#pragma once

// Attention Bias Calibration (Duan & Shi 2023, section 5 and Algorithm 1; docs/abc.md): the
// line averages of an averaged attention map, their drop-off threshold, and the extension of
// the kept lines to a bias matrix of any size. Shared by the `calibrate` stage, which computes
// the lines, and the `abc` position scheme, which turns them into biases for each batch.
//
// Conventions: cells are 0-based (i, j) in code; the paper's line index l uses 1-based cells:
//   (1, 1)  diagonal       l = j - i            l in [-(m-1), n-1]
//   (1, 0)  vertical       l = j                l in [1, n]
//   (1,-1)  anti-diagonal  l = (n + 1) - (i+j)  l in [-(m-1), n-1]
// Rows are anchored at the top. Columns are anchored left (the small matrix shares the big
// one's top-left corner) or right (top-right corners aligned: columns shifted by N - n).
//
// Private to the plugin (compiled into the `abc` scheme, the `calibrate` stage and their
// tests); the file format to_tensors writes is documented in docs/abc.md.

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lengen::abc {

enum class Direction { kDiagonal, kAntiDiagonal, kVertical };
enum class Anchor { kLeft, kRight };
/// What a line's value d_l is: the mean of its cells (the paper's eq. (1)) or their sum (the
/// authors' released calcBias.py). A sum weighs a line by its length, so a line of one or two
/// cells in a corner of the map cannot outscore a line that crosses every row.
enum class Statistic { kMean, kSum };

/// "diagonal", "anti_diagonal", "vertical".
const char* direction_name(Direction d);
/// The inverse of direction_name; fails naming the known ones.
Direction parse_direction(const std::string& s);

/// The lines of one direction of one averaged m x n map (one head), with the threshold
/// decision: Duan & Shi 2023's eq. (1) (d_l = mean of the line's cells) and eq. (2) (kept lines get
/// d_l - d_max; a line is kept iff d_l > mu + sigmas * sigma over all lines of the direction,
/// sigma the population standard deviation; abc.md section 4's resolution of the printed
/// "dropoff(d_l - d_max)", which would drop every line).
struct Lines {
  Direction direction = Direction::kDiagonal;
  Anchor anchor = Anchor::kLeft;
  int64_t rows = 0, cols = 0;  ///< m, n of the averaged map
  std::vector<double> mean;    ///< d_l of line first() + k (a mean or a sum); NaN: no visible cell
  std::vector<double> bias;    ///< d_l - d_max where kept, -inf elsewhere
  double mu = 0, sigma = 0, threshold = 0, d_max = 0;

  /// Line index l of entry 0 of mean/bias.
  int64_t first() const { return direction == Direction::kVertical ? 1 : -(rows - 1); }

  int64_t count() const { return direction == Direction::kVertical ? cols : rows + cols - 1; }

  bool any_kept() const;
  /// The line index l of 0-based cell (i, j) of a matrix with N columns, after anchoring the
  /// m x n map in it (N = cols: the map's own lines). May lie outside the map's lines.
  int64_t line_of(int64_t i, int64_t j, int64_t N) const;
};

/// The lines of `mean` [m, n] (float64) in one direction. `visible` [m, n] bool marks the cells
/// that carry attention (a causal map's upper triangle does not); undefined: all. Cells that
/// are not finite count as invisible too. `statistic`: d_l is the line's mean or its sum.
/// `min_rows`: a line is kept only if it has visible cells in at least this many rows of the
/// map (0: any line, the paper). mu and sigma still count every line, so the rule only refuses
/// lines whose evidence is a corner of the map (two cells of the last rows), which the extension
/// would continue through every longer row; d_max is the largest line that may be kept.
/// `informative` [m, n] bool (undefined: every cell): a line is kept only if one of its visible
/// cells is informative. Marking the keys that hold the same token in every calibration sample
/// as not informative refuses lines that read only zero padding or a marker (an attention sink
/// of the short map); extended to longer inputs, such a line lands on digits.
Lines average_lines(const torch::Tensor& mean,
                    const torch::Tensor& visible,
                    Direction direction,
                    Anchor anchor,
                    double sigmas,
                    Statistic statistic = Statistic::kMean,
                    int64_t min_rows = 0,
                    const torch::Tensor& informative = {});

/// Explain-away selection over one head's directions (beyond the paper and the released code;
/// docs/abc.md): keep the line furthest above its direction's threshold (in sigmas), set its
/// cells to 0 in a copy of `mean`, recompute every line there, and repeat while a line not yet
/// kept still passes its threshold and crosses at least `min_rows` rows. A line that only
/// passes through a kept line's strong cells (a vertical or a diagonal through an
/// anti-diagonal's cells) then falls below. `head` holds average_lines's result for each
/// direction of `mean`; mu, sigma, the thresholds and d_max stay the first pass's, and each
/// kept line gets its first-pass d_l - d_max, as average_lines gives it. `informative`: as for
/// average_lines.
void explain_away(std::vector<Lines>& head,
                  const torch::Tensor& mean,
                  const torch::Tensor& visible,
                  Statistic statistic,
                  int64_t min_rows,
                  const torch::Tensor& informative = {});

/// The fallback for a head where no line passes (beyond the paper and the released code, which
/// leave such a head transparent; docs/abc.md): if no direction of `head` keeps a line, keep the
/// one line furthest above its direction's mean mu, in sigmas, among those that cross at least
/// `min_rows` rows and read an informative cell, with its d_l - d_max as average_lines gives it.
/// `head` holds average_lines's result for each direction of `mean`. Returns whether it kept one
/// (false when the head already had a line, or no line is eligible).
bool keep_strongest(std::vector<Lines>& head,
                    const torch::Tensor& mean,
                    const torch::Tensor& visible,
                    Statistic statistic,
                    int64_t min_rows,
                    const torch::Tensor& informative = {});

/// One head's bias for rows [row0, row0 + M) and N columns: per cell the maximum over the
/// directions of the kept line's value (-inf where none), Algorithm 1's merge. When no
/// direction keeps any line the head is transparent (all 0: the paper's fallback for a bias
/// of only -inf); a row left without a finite cell it may attend to is set to 0 (softmax stays
/// defined). `causal`: row r may attend to columns <= r only (decoder self-attention; the
/// fallback then does not depend on later keys, so KV-cached decoding sees the same rows).
/// -> [M, N] float64.
torch::Tensor extend(
    const std::vector<Lines>& head, int64_t row0, int64_t M, int64_t N, bool causal = false);

/// What calibration produces for one attention kind: per head, the lines of each searched
/// direction.
struct KindLines {
  std::vector<std::vector<Lines>> heads;  ///< [head][direction]

  bool empty() const { return heads.empty(); }
};

/// The tensors that store `lines` under `prefix` (e.g. "cross"): "<prefix>.<direction>.mean"
/// and ".bias" [H, lines] float64, ".info" [4] int64 (m, n, anchor 0 left / 1 right, 0) and
/// ".stats" [H, 4] float64 (mu, sigma, threshold, d_max).
std::vector<std::pair<std::string, torch::Tensor>> to_tensors(const std::string& prefix,
                                                              const KindLines& lines);
/// The inverse of to_tensors: the lines under `prefix` in `tensors` (empty when there are none).
/// Fails naming the tensor when one is malformed.
KindLines from_tensors(const std::string& prefix,
                       const std::vector<std::pair<std::string, torch::Tensor>>& tensors);

}  // namespace lengen::abc
