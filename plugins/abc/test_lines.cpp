// Attention Bias Calibration's arithmetic (plugins/abc/lines.h) on the spec's worked examples
// (docs/abc.md; Duan & Shi 2023, Section 4, values computed by hand and with numpy).
#include "helpers.h"
#include "lines.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace abc = lengen::abc;

namespace {

// Cross-attention average of one head of a reversed unary task: 3 decoding steps x 4 inputs.
torch::Tensor example_map() {
  return torch::tensor({0.04, 0.04, 0.12, 0.80, 0.05, 0.10, 0.75, 0.10, 0.10, 0.70, 0.10, 0.10},
                       torch::kFloat64)
      .view({3, 4});
}

std::vector<abc::Lines> all_directions(const torch::Tensor& m, double sigmas) {
  return {abc::average_lines(m, {}, abc::Direction::kDiagonal, abc::Anchor::kLeft, sigmas),
          abc::average_lines(m, {}, abc::Direction::kAntiDiagonal, abc::Anchor::kRight, sigmas),
          abc::average_lines(m, {}, abc::Direction::kVertical, abc::Anchor::kRight, sigmas)};
}

double line_mean(const abc::Lines& l, int64_t line) {
  return l.mean[static_cast<size_t>(line - l.first())];
}

}  // namespace

TEST_CASE("abc: line averages, their statistics and thresholds (worked example)", "[abc]") {
  auto dirs = all_directions(example_map(), 4.0);
  const auto& diag = dirs[0];
  const auto& anti = dirs[1];
  const auto& vert = dirs[2];
  // (1,1), l = j - i: -2: 0.10, -1: 0.375, 0: 0.08, 1: 0.2967, 2: 0.11, 3: 0.80.
  REQUIRE(diag.count() == 6);
  CHECK(diag.first() == -2);
  CHECK(line_mean(diag, -2) == Approx(0.10));
  CHECK(line_mean(diag, -1) == Approx(0.375));
  CHECK(line_mean(diag, 0) == Approx(0.08));
  CHECK(line_mean(diag, 1) == Approx(0.89 / 3));
  CHECK(line_mean(diag, 2) == Approx(0.11));
  CHECK(line_mean(diag, 3) == Approx(0.80));
  CHECK(diag.mu == Approx(0.2936).epsilon(1e-3));
  CHECK(diag.sigma == Approx(0.2516).epsilon(1e-3));  // population standard deviation
  CHECK(diag.threshold == Approx(1.3001).epsilon(1e-3));
  // (1,-1), l = (n + 1) - (i + j): 3: 0.04, 2: 0.045, 1: 0.1067, 0: 0.75, -1: 0.10, -2: 0.10.
  CHECK(line_mean(anti, 3) == Approx(0.04));
  CHECK(line_mean(anti, 2) == Approx(0.045));
  CHECK(line_mean(anti, 1) == Approx(0.32 / 3));
  CHECK(line_mean(anti, 0) == Approx(0.75));
  CHECK(line_mean(anti, -1) == Approx(0.10));
  CHECK(anti.mu == Approx(0.1903).epsilon(1e-3));
  CHECK(anti.threshold == Approx(1.1973).epsilon(1e-3));
  // (1,0), l = j: 0.0633, 0.28, 0.3233, 0.3333.
  REQUIRE(vert.count() == 4);
  CHECK(line_mean(vert, 1) == Approx(0.19 / 3));
  CHECK(line_mean(vert, 4) == Approx(1.0 / 3));
  CHECK(vert.threshold == Approx(0.6885).epsilon(1e-3));
  // k = 4: no line survives anywhere, so the extended head is transparent: all zeros.
  for (const auto& l : dirs)
    CHECK(!l.any_kept());
  auto ext = abc::extend(dirs, 0, 5, 6);
  CHECK(torch::equal(ext, torch::zeros({5, 6}, torch::kFloat64)));
}

TEST_CASE("abc: extension to 5 x 6 with k = 1 (worked example)", "[abc]") {
  auto dirs = all_directions(example_map(), 1.0);
  CHECK(dirs[0].threshold == Approx(0.5452).epsilon(1e-3));
  CHECK(dirs[1].threshold == Approx(0.4420).epsilon(1e-3));
  CHECK(dirs[2].threshold == Approx(0.3596).epsilon(1e-3));
  CHECK(!dirs[2].any_kept());
  auto ext = abc::extend(dirs, 0, 5, 6);
  const double n = -std::numeric_limits<double>::infinity();
  auto want = torch::tensor({n, n,  n,  0., n,  0.,  //
                             n, n,  n,  n,  0., n,   //
                             n, n,  n,  0., n,  0.,  //
                             n, n,  0., n,  n,  n,   //
                             n, 0., n,  n,  n,  n},
                            torch::kFloat64)
                  .view({5, 6});
  CHECK(torch::equal(ext, want));
  // The anti-diagonal is right-anchored: in the 5 x 6 frame l = 7 - (i + j) (1-based).
  CHECK(dirs[1].line_of(0, 5, 6) == 0);
  CHECK(dirs[1].line_of(4, 1, 6) == 0);
  // Extending to the map's own size keeps its lines where they were.
  auto own = abc::extend(dirs, 0, 3, 4);
  CHECK(own[0][3].item<double>() == 0.0);
  CHECK(own[1][2].item<double>() == 0.0);
  CHECK(own[2][1].item<double>() == 0.0);
}

TEST_CASE("abc: two lines survive the paper's threshold in a wide map (second example)", "[abc]") {
  // m = 2, n = 40: row i puts 0.50 on column n + 1 - i, 0.45 on n - i, 0.05 / 38 elsewhere.
  auto m = torch::full({2, 40}, 0.05 / 38, torch::kFloat64);
  for (int64_t i = 1; i <= 2; ++i) {
    m[i - 1][40 + 1 - i - 1] = 0.50;
    m[i - 1][40 - i - 1] = 0.45;
  }
  auto anti = abc::average_lines(m, {}, abc::Direction::kAntiDiagonal, abc::Anchor::kRight, 4.0);
  CHECK(anti.count() == 41);
  CHECK(anti.mu == Approx(0.02442).epsilon(1e-3));
  CHECK(anti.sigma == Approx(0.10219).epsilon(1e-3));
  CHECK(anti.threshold == Approx(0.43316).epsilon(1e-3));
  CHECK(anti.bias[static_cast<size_t>(0 - anti.first())] == 0.0);
  CHECK(anti.bias[static_cast<size_t>(1 - anti.first())] == Approx(-0.05));
  int64_t kept = 0;
  for (double b : anti.bias)
    kept += std::isfinite(b) ? 1 : 0;
  CHECK(kept == 2);
  // Extended to 4 x 44: row r keeps columns 45 - r (0) and 44 - r (-0.05), 1-based.
  auto ext = abc::extend({anti}, 0, 4, 44);
  for (int64_t r = 1; r <= 4; ++r) {
    for (int64_t c = 1; c <= 44; ++c) {
      const double v = ext[r - 1][c - 1].item<double>();
      if (c == 45 - r) {
        CHECK(v == 0.0);
      } else if (c == 44 - r) {
        CHECK(v == Approx(-0.05));
      } else {
        CHECK(std::isinf(v));
      }
    }
  }
}

TEST_CASE("abc: causal maps use only visible cells; rows with nothing visible fall back to 0",
          "[abc]") {
  // A self-attention map whose weight sits on the diagonal: the (1,1) line l = 0 survives.
  auto m = torch::eye(6, torch::kFloat64) * 0.9 + torch::full({6, 6}, 0.1 / 6, torch::kFloat64);
  auto visible = torch::ones({6, 6}, torch::kBool).tril();
  auto d = abc::average_lines(m.masked_fill(visible.logical_not(), 0.0),
                              visible,
                              abc::Direction::kDiagonal,
                              abc::Anchor::kLeft,
                              1.0);
  // Lines above the diagonal have no visible cell: not part of the statistics, never kept.
  for (int64_t l = 1; l <= 5; ++l)
    CHECK(std::isnan(d.mean[static_cast<size_t>(l - d.first())]));
  CHECK(d.bias[static_cast<size_t>(0 - d.first())] == 0.0);
  // Rows from row0 = 3 on, 4 keys: the same values as the matching rows of the full matrix.
  auto full = abc::extend({d}, 0, 8, 8, true);
  auto part = abc::extend({d}, 3, 2, 5, true);
  CHECK(torch::equal(part, full.narrow(0, 3, 2).narrow(1, 0, 5)));
  // A line kept only above the diagonal would leave causal rows without a visible cell.
  abc::Lines up = d;
  std::fill(up.bias.begin(), up.bias.end(), -std::numeric_limits<double>::infinity());
  up.bias[static_cast<size_t>(2 - up.first())] = 0.0;  // l = j - i = 2: future keys only
  auto rows = abc::extend({up}, 0, 3, 6, true);
  CHECK(torch::equal(rows, torch::zeros({3, 6}, torch::kFloat64)));  // every row falls back
}

TEST_CASE("abc: lines survive a round trip through their tensors", "[abc]") {
  abc::KindLines kl;
  kl.heads.push_back(all_directions(example_map(), 1.0));
  kl.heads.push_back(all_directions(example_map().flip({1}), 1.0));
  auto back = abc::from_tensors("cross", abc::to_tensors("cross", kl));
  REQUIRE(back.heads.size() == 2);
  for (size_t h = 0; h < 2; ++h) {
    REQUIRE(back.heads[h].size() == 3);
    CHECK(torch::equal(abc::extend(back.heads[h], 0, 5, 9), abc::extend(kl.heads[h], 0, 5, 9)));
    CHECK(back.heads[h][1].anchor == abc::Anchor::kRight);
    CHECK(back.heads[h][0].threshold == kl.heads[h][0].threshold);
  }
  CHECK(abc::from_tensors("self", abc::to_tensors("cross", kl)).empty());
  CHECK_THROWS_WITH(abc::parse_direction("antidiagonal"), Catch::Contains("anti_diagonal"));
}

TEST_CASE("abc: a line's sum weighs it by its length; a one-cell corner line wins only as a mean",
          "[abc]") {
  // 7 x 30, background 0.01: every row puts 0.3 on the anti-diagonal l = 2, and the last row
  // also puts 0.6 on the last column, a line of one cell (l = 31 - 37 = -6). This is what the
  // N x 1 calibrations of seeds 1 and 2 looked like (docs/results.md).
  auto m = torch::full({7, 30}, 0.01, torch::kFloat64);
  for (int64_t i = 1; i <= 7; ++i)
    m[i - 1][30 + 1 - 2 - i - 1] = 0.3;
  m[6][29] = 0.6;
  auto at = [](const abc::Lines& l, int64_t line) { return static_cast<size_t>(line - l.first()); };
  auto mean = abc::average_lines(m, {}, abc::Direction::kAntiDiagonal, abc::Anchor::kRight, 4.0);
  auto sum = abc::average_lines(
      m, {}, abc::Direction::kAntiDiagonal, abc::Anchor::kRight, 4.0, abc::Statistic::kSum);
  CHECK(mean.mean[at(mean, 2)] == Approx(0.3));
  CHECK(mean.mean[at(mean, -6)] == Approx(0.6));
  CHECK(sum.mean[at(sum, 2)] == Approx(2.1));
  CHECK(sum.mean[at(sum, -6)] == Approx(0.6));
  // Every line's sum is its mean times its number of cells (min(i, 7, 30 + 7 - i) for the i-th
  // line).
  for (int64_t k = 0; k < sum.count(); ++k) {
    const int64_t cells = std::min({k + 1, int64_t{7}, sum.count() - k});
    CHECK(sum.mean[static_cast<size_t>(k)] ==
          Approx(mean.mean[static_cast<size_t>(k)] * static_cast<double>(cells)));
  }
  auto kept = [](const abc::Lines& l) {
    std::vector<int64_t> out;
    for (int64_t k = 0; k < l.count(); ++k) {
      if (std::isfinite(l.bias[static_cast<size_t>(k)]))
        out.push_back(l.first() + k);
    }
    return out;
  };
  CHECK(kept(mean) == std::vector<int64_t>{-6});  // the mean keeps the corner and drops the line
  CHECK(kept(sum) == std::vector<int64_t>{2});    // the sum keeps the line
  CHECK(sum.bias[at(sum, 2)] == 0.0);
}

TEST_CASE("abc: min_rows refuses a corner line that crosses too few rows, and only that", "[abc]") {
  // 7 x 30, background 0.01: the anti-diagonal l = 2 at 0.3 in every row, and a line of two
  // cells in the last two rows' right corner (l = 29 - i - j = -5 at (5, 29) and (6, 28)), 0.6
  // each: what layer 0, head 3 of seed 2's N x 1 calibration kept (docs/results.md).
  auto m = torch::full({7, 30}, 0.01, torch::kFloat64);
  for (int64_t i = 0; i < 7; ++i)
    m[i][29 - 2 - i] = 0.3;
  m[5][29] = 0.6;
  m[6][28] = 0.6;
  auto kept = [](const abc::Lines& l) {
    std::vector<int64_t> out;
    for (int64_t k = 0; k < l.count(); ++k) {
      if (std::isfinite(l.bias[static_cast<size_t>(k)]))
        out.push_back(l.first() + k);
    }
    return out;
  };
  const auto sum = abc::Statistic::kSum;
  auto any =
      abc::average_lines(m, {}, abc::Direction::kAntiDiagonal, abc::Anchor::kRight, 2.0, sum);
  CHECK(kept(any) == std::vector<int64_t>{-5, 2});  // a sum of 1.2 passes beside the line's 2.1
  // The corner line crosses 2 rows: kept at min_rows 2, refused from 3 on; the line of 7 rows
  // stays up to min_rows 7 and is refused at 8. The statistics are those of every line.
  for (int64_t rows : {1, 2, 3, 4, 7, 8}) {
    auto l = abc::average_lines(
        m, {}, abc::Direction::kAntiDiagonal, abc::Anchor::kRight, 2.0, sum, rows);
    const std::vector<int64_t> want = rows <= 2   ? std::vector<int64_t>{-5, 2}
                                      : rows <= 7 ? std::vector<int64_t>{2}
                                                  : std::vector<int64_t>{};
    CHECK(kept(l) == want);
    CHECK(l.mu == any.mu);
    CHECK(l.sigma == any.sigma);
    CHECK(l.mean == any.mean);
  }
  // The strongest kept line's bias is 0, the others' d_l - d_max over the lines that may be kept.
  auto four =
      abc::average_lines(m, {}, abc::Direction::kAntiDiagonal, abc::Anchor::kRight, 2.0, sum, 4);
  CHECK(four.bias[static_cast<size_t>(2 - four.first())] == 0.0);
  CHECK(any.bias[static_cast<size_t>(-5 - any.first())] == Approx(1.2 - 2.1));
  // In a causal map rows count visible cells only: the previous-token diagonal (l = -1) has
  // cells in rows 1-6 (0-based), 6 of 7.
  auto causal = torch::full({7, 7}, 0.02, torch::kFloat64);
  for (int64_t i = 1; i < 7; ++i)
    causal[i][i - 1] = 0.9;
  const auto visible = torch::ones({7, 7}, torch::kBool).tril();
  CHECK(kept(abc::average_lines(
            causal, visible, abc::Direction::kDiagonal, abc::Anchor::kLeft, 2.0, sum, 6)) ==
        std::vector<int64_t>{-1});
  CHECK(kept(abc::average_lines(
                 causal, visible, abc::Direction::kDiagonal, abc::Anchor::kLeft, 2.0, sum, 7))
            .empty());
}

TEST_CASE("abc: explain-away keeps the lines, not the lines through their cells", "[abc]") {
  // 7 x 30, background 0.01: an anti-diagonal of 1.0 per cell (l = 2, columns 21-27) and a
  // vertical line of 0.3 per cell (column 5, l = 6). At k = 1 the threshold also keeps every
  // vertical and diagonal that crosses one of the anti-diagonal's cells; explain-away keeps
  // the anti-diagonal, zeroes its cells, and then only the vertical line still passes.
  auto m = torch::full({7, 30}, 0.01, torch::kFloat64);
  for (int64_t i = 0; i < 7; ++i)
    m[i][27 - i] = 1.0;
  m.select(1, 5).fill_(0.3);
  const auto sum = abc::Statistic::kSum;
  auto head = [&] {
    return std::vector<abc::Lines>{
        abc::average_lines(m, {}, abc::Direction::kDiagonal, abc::Anchor::kLeft, 1.0, sum),
        abc::average_lines(m, {}, abc::Direction::kAntiDiagonal, abc::Anchor::kRight, 1.0, sum),
        abc::average_lines(m, {}, abc::Direction::kVertical, abc::Anchor::kRight, 1.0, sum)};
  };
  auto kept = [](const abc::Lines& l) {
    std::vector<int64_t> out;
    for (int64_t k = 0; k < l.count(); ++k) {
      if (std::isfinite(l.bias[static_cast<size_t>(k)]))
        out.push_back(l.first() + k);
    }
    return out;
  };
  auto threshold = head();
  CHECK(kept(threshold[0]) == std::vector<int64_t>{15, 17, 19, 21, 23, 25, 27});
  CHECK(kept(threshold[1]) == std::vector<int64_t>{2});
  CHECK(kept(threshold[2]) == std::vector<int64_t>{6, 22, 23, 24, 25, 26, 27, 28});
  auto selected = head();
  abc::explain_away(selected, m, {}, sum, 0);
  CHECK(kept(selected[0]).empty());
  CHECK(kept(selected[1]) == std::vector<int64_t>{2});
  CHECK(kept(selected[2]) == std::vector<int64_t>{6});
  // Kept lines keep their first-pass values, d_l - d_max of their own direction.
  CHECK(selected[1].bias[static_cast<size_t>(2 - selected[1].first())] == 0.0);
  CHECK(selected[2].bias[static_cast<size_t>(6 - selected[2].first())] ==
        threshold[2].bias[static_cast<size_t>(6 - threshold[2].first())]);
  // min_rows applies to the candidates: with 8 rows required nothing is kept.
  auto none = head();
  abc::explain_away(none, m, {}, sum, 8);
  for (const auto& l : none)
    CHECK(kept(l).empty());
}

TEST_CASE(
    "abc: a line that reads only constant keys is refused when keys are marked, and only then",
    "[abc]") {
  // 7 x 30, background 0.01: the anti-diagonal l = 2 at 0.5 per cell, and a vertical line of
  // 0.4 per cell on column 20 (l = 21), an attention sink on a key that holds the same token in
  // every calibration sample (zero padding beyond the trained length). Unmarked, both pass;
  // with column 20 marked not informative, the vertical line is refused and the anti-diagonal,
  // which crosses column 20 in one row (i = 5) only, is still kept, by threshold and by
  // explain-away alike.
  auto m = torch::full({7, 30}, 0.01, torch::kFloat64);
  for (int64_t i = 0; i < 7; ++i)
    m[i][29 - 2 - i] = 0.5;
  m.select(1, 20).fill_(0.4);
  auto informative = torch::ones({7, 30}, torch::kBool);
  informative.select(1, 20).fill_(false);
  const auto sum = abc::Statistic::kSum;
  auto kept = [](const abc::Lines& l) {
    std::vector<int64_t> out;
    for (int64_t k = 0; k < l.count(); ++k) {
      if (std::isfinite(l.bias[static_cast<size_t>(k)]))
        out.push_back(l.first() + k);
    }
    return out;
  };
  auto vertical = [&](const torch::Tensor& info) {
    return abc::average_lines(
        m, {}, abc::Direction::kVertical, abc::Anchor::kRight, 2.0, sum, 0, info);
  };
  auto anti = [&](const torch::Tensor& info) {
    return abc::average_lines(
        m, {}, abc::Direction::kAntiDiagonal, abc::Anchor::kRight, 2.0, sum, 0, info);
  };
  CHECK(kept(vertical({})) == std::vector<int64_t>{21});
  CHECK(kept(vertical(informative)).empty());
  CHECK(kept(anti({})) == std::vector<int64_t>{2});
  CHECK(kept(anti(informative)) == std::vector<int64_t>{2});
  // The statistics do not change: only which lines may be kept.
  CHECK(vertical(informative).mu == vertical({}).mu);
  CHECK(vertical(informative).sigma == vertical({}).sigma);
  std::vector<abc::Lines> head{anti({}), vertical({})};
  abc::explain_away(head, m, {}, sum, 0, informative);
  CHECK(kept(head[0]) == std::vector<int64_t>{2});
  CHECK(kept(head[1]).empty());
  std::vector<abc::Lines> unmarked{anti({}), vertical({})};
  abc::explain_away(unmarked, m, {}, sum, 0);
  CHECK(kept(unmarked[1]) == std::vector<int64_t>{21});
  // A mask of another shape is refused, naming what it expected.
  CHECK_THROWS_WITH(abc::average_lines(m,
                                       {},
                                       abc::Direction::kVertical,
                                       abc::Anchor::kRight,
                                       2.0,
                                       sum,
                                       0,
                                       torch::ones({7, 29}, torch::kBool)),
                    Catch::Contains("[7, 30]"));
}

TEST_CASE(
    "abc: empty_heads strongest keeps a transparent head's most outstanding line, and only then",
    "[abc]") {
  // The worked example at k = 4 keeps no line. The most outstanding line, in sigmas above its
  // direction's mean, is the reversed copy: anti-diagonal l = 0, (0.75 - 0.1903) / 0.2518 = 2.22
  // (diagonal l = 3: (0.80 - 0.2936) / 0.2516 = 2.01; vertical l = 4: 0.76).
  auto head = all_directions(example_map(), 4.0);
  REQUIRE(abc::keep_strongest(head, example_map(), {}, abc::Statistic::kMean, 0));
  CHECK(!head[0].any_kept());
  CHECK(!head[2].any_kept());
  REQUIRE(head[1].any_kept());
  int64_t kept = 0;
  for (int64_t k = 0; k < head[1].count(); ++k) {
    if (std::isfinite(head[1].bias[static_cast<size_t>(k)])) {
      CHECK(head[1].first() + k == 0);
      CHECK(head[1].bias[static_cast<size_t>(k)] == Approx(0.0));  // the direction's d_max: bias 0
      ++kept;
    }
  }
  CHECK(kept == 1);
  // Extended, every row reads its reversed input digit (right-anchored anti-diagonal l = 0):
  // row i of a 5 x 6 map attends column N - 1 - i.
  auto ext = abc::extend(head, 0, 5, 6);
  for (int64_t i = 0; i < 5; ++i) {
    for (int64_t j = 0; j < 6; ++j) {
      CHECK(std::isfinite(ext[i][j].item<double>()) == (j == 5 - i));
    }
  }
  // A head with a kept line is left as it is.
  auto passed = all_directions(example_map(), 1.0);
  auto before = passed;
  CHECK(!abc::keep_strongest(passed, example_map(), {}, abc::Statistic::kMean, 0));
  for (size_t d = 0; d < passed.size(); ++d)
    CHECK(passed[d].bias == before[d].bias);
  // Eligibility holds: with the anti-diagonal's cells marked constant, the next line is chosen:
  // not the diagonal l = 3 (its one cell is the anti-diagonal's too), but the vertical l = 4,
  // (0.3333 - 0.25) / 0.1096 = 0.76 (the diagonal l = -1: 0.32).
  auto info = torch::ones({3, 4}, torch::kBool);
  info[0][3] = false, info[1][2] = false, info[2][1] = false;
  auto masked = all_directions(example_map(), 4.0);
  REQUIRE(abc::keep_strongest(masked, example_map(), {}, abc::Statistic::kMean, 0, info));
  CHECK(!masked[0].any_kept());
  CHECK(!masked[1].any_kept());
  CHECK(std::isfinite(masked[2].bias[3]));
  // With no line eligible (every cell constant), the head stays transparent.
  auto none = all_directions(example_map(), 4.0);
  CHECK(!abc::keep_strongest(
      none, example_map(), {}, abc::Statistic::kMean, 0, torch::zeros({3, 4}, torch::kBool)));
  for (const auto& l : none)
    CHECK(!l.any_kept());
}
