// The reproduction page's pictures (charts.h): a line chart over one axis, heatmaps over two,
// as self-contained SVG with a fixed number format (the same data give the same bytes).
#include "charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <sstream>

namespace lengen::charts {

namespace {

const char* const kPalette[] = {"#1f77b4",
                                "#d62728",
                                "#2ca02c",
                                "#9467bd",
                                "#ff7f0e",
                                "#8c564b",
                                "#e377c2",
                                "#17becf",
                                "#7f7f7f",
                                "#bcbd22"};

}  // namespace

std::string xml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string figure_text(double x) {
  if (std::isnan(x))
    return "-";
  const std::string s = fmt::format("{:.1f}", 100 * x);
  return s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0 ? s.substr(0, s.size() - 2) : s;
}

std::vector<int64_t> coordinates(const std::string& key) {
  std::vector<int64_t> v;
  std::stringstream ss(key);
  for (std::string part; std::getline(ss, part, ',');)
    v.push_back(std::stoll(part));
  return v;
}

namespace {

// The line chart's geometry: the plot area inside the margins and the first axis' range.
struct Plot {
  double W = 720, H = 300, left = 48, right = 200, top = 28, bottom = 40;
  double pw = W - left - right, ph = H - top - bottom;
  int64_t lo = 0, hi = 1;

  double X(double v) const { return left + pw * (v - lo) / double(hi - lo); }

  double Y(double a) const { return top + ph * (1 - a); }
};

// A diamond of half-width 6 around (x, y): how the pictures mark the paper's figures.
std::string diamond(double x, double y, const std::string& fill) {
  return fmt::format(
      "<polygon points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" fill=\"{}\" "
      "stroke=\"#000000\"/>\n",
      x,
      y - 6,
      x + 6,
      y,
      x,
      y + 6,
      x - 6,
      y,
      fill);
}

// The chart's frame: the trained range shaded, the grid, the axes' labels and the title.
std::string chart_frame(const Plot& p, const DataSet& set, const std::string& axis) {
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" viewBox=\"0 0 "
      "{:.0f} {:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<title>{}</title>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n",
      p.W,
      p.H,
      p.W,
      p.H,
      xml(set.source.name));
  if (auto t = set.source.trained.find(axis); t != set.source.trained.end()) {
    const double a = std::max<double>(p.lo, t->second.first - 0.5),
                 b = std::min<double>(p.hi, t->second.second + 0.5);
    if (b > a) {
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#eeeeee\"/>\n",
          p.X(a),
          p.top,
          p.X(b) - p.X(a),
          p.ph);
      s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#777777\">trained</text>\n",
                       p.X(a) + 3,
                       p.top + 12);
    }
  }
  for (int g = 0; g <= 4; ++g) {
    const double y = p.Y(g / 4.0);
    s += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#cccccc\"/>\n",
        p.left,
        y,
        p.left + p.pw,
        y);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                     p.left - 4,
                     y + 4,
                     25 * g);
  }
  const int64_t span = p.hi - p.lo, step = std::max<int64_t>(1, (span + 11) / 12);
  for (int64_t v = p.lo; v <= p.hi; v += step) {
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                     p.X(v),
                     p.top + p.ph + 14,
                     v);
  }
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                   p.left + p.pw / 2,
                   p.H - 6,
                   xml(axis));
  s += fmt::format(
      "<text x=\"12\" y=\"{:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 12 "
      "{:.1f})\">exact match "
      "%</text>\n",
      p.top + p.ph / 2,
      p.top + p.ph / 2);
  s += fmt::format(
      "<text x=\"{:.1f}\" y=\"16\" font-size=\"13\">{}</text>\n", p.left, xml(set.source.name));
  return s;
}

// Configuration i's series: the seeds' band, the median line, its legend entry (row i) and the
// paper's figures for it.
std::string chart_series(const Plot& p,
                         const DataSet& set,
                         const std::string& config,
                         size_t i,
                         const std::vector<Marker>& marks) {
  const std::string color = kPalette[i % std::size(kPalette)];
  std::vector<std::pair<int64_t, const CellFigures*>> points;
  for (const auto& [cell, f] : set.accuracy.at(config))
    points.emplace_back(coordinates(cell)[0], &f);
  std::sort(
      points.begin(), points.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string band, up, line;
  auto or_median = [](double v, const CellFigures* f) { return std::isnan(v) ? f->median : v; };
  for (const auto& [x, f] : points)
    up += fmt::format("{:.1f},{:.1f} ", p.X(x), p.Y(or_median(f->max, f)));
  for (auto it = points.rbegin(); it != points.rend(); ++it) {
    band +=
        fmt::format("{:.1f},{:.1f} ", p.X(it->first), p.Y(or_median(it->second->min, it->second)));
  }
  for (const auto& [x, f] : points)
    line += fmt::format("{:.1f},{:.1f} ", p.X(x), p.Y(f->median));
  std::string s =
      fmt::format("<polygon points=\"{}{}\" fill=\"{}\" fill-opacity=\"0.15\" stroke=\"none\"/>\n",
                  up,
                  band,
                  color);
  s += fmt::format(
      "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", line, color);
  const double ly = p.top + 8 + 16 * i;
  std::string label = config.size() > 30 ? config.substr(0, 29) + "..." : config;
  s += fmt::format(
      "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
      "stroke-width=\"3\"/>\n",
      p.left + p.pw + 10,
      ly,
      p.left + p.pw + 26,
      ly,
      color);
  s += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", p.left + p.pw + 30, ly + 4, xml(label));
  for (const auto& m : marks) {
    if (m.config != config || std::isnan(m.value))
      continue;
    s += diamond(p.X(coordinates(m.cell)[0]), p.Y(m.value), color);
  }
  return s;
}

}  // namespace

std::string line_chart(const DataSet& set,
                       const std::vector<std::string>& configs,
                       const std::vector<Marker>& marks) {
  Plot p;
  p.lo = std::numeric_limits<int64_t>::max();
  p.hi = std::numeric_limits<int64_t>::min();
  for (const auto& c : configs) {
    for (const auto& [cell, f] : set.accuracy.at(c)) {
      p.lo = std::min(p.lo, coordinates(cell)[0]);
      p.hi = std::max(p.hi, coordinates(cell)[0]);
    }
  }
  if (p.lo == p.hi) {
    --p.lo;
    ++p.hi;
  }
  std::string s = chart_frame(p, set, set.source.cell_axes.front());
  for (size_t i = 0; i < configs.size(); ++i)
    s += chart_series(p, set, configs[i], i, marks);
  // The legend's last entries: the paper's diamond and how to read a series.
  const double ly = p.top + 8 + 16 * configs.size() + 6;
  s += diamond(p.left + p.pw + 18, ly, "#ffffff");
  s +=
      fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">the paper</text>\n", p.left + p.pw + 30, ly + 4);
  s += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#555555\">line: median; band: seeds' range</text>\n",
      p.left + p.pw + 10,
      ly + 22);
  s += "</svg>\n";
  return s;
}

// Two axes: per configuration a heatmap of the median over seeds (rows: the first axis,
// columns: the second), the paper's cells outlined, the trained region dashed.
std::string heatmaps(const DataSet& set,
                     const std::vector<std::string>& configs,
                     const std::vector<Marker>& marks) {
  std::vector<int64_t> rows, cols;
  for (const auto& c : configs) {
    for (const auto& [cell, f] : set.accuracy.at(c)) {
      const auto xy = coordinates(cell);
      rows.push_back(xy[0]);
      cols.push_back(xy[1]);
    }
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  std::sort(cols.begin(), cols.end());
  cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
  const double cw = 34, ch = 20, left = 60, top = 40, gap = 50;
  const double pw = cw * cols.size(), ph = ch * rows.size();
  const double W = std::max(640.0, left + pw + 20), H = top + (ph + gap) * configs.size();
  const auto& ax = set.source.cell_axes;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" viewBox=\"0 0 "
      "{:.0f} {:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"10\">\n<title>{}</title>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
      "<text x=\"{:.1f}\" y=\"16\" font-size=\"13\">{}: median exact match % ({} down, {} across; "
      "outlined: the paper's cells, dashed: trained)</text>\n",
      W,
      H,
      W,
      H,
      xml(set.source.name),
      4.0,
      xml(set.source.name),
      xml(ax[0]),
      xml(ax[1]));
  for (size_t k = 0; k < configs.size(); ++k) {
    const double y0 = top + (ph + gap) * k + 14;
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\">{}</text>\n",
                     left,
                     y0 - 18,
                     xml(configs[k]));
    for (size_t j = 0; j < cols.size(); ++j) {
      s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                       left + cw * (j + 0.5),
                       y0 - 4,
                       cols[j]);
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                       left - 4,
                       y0 + ch * (i + 0.5) + 4,
                       rows[i]);
      for (size_t j = 0; j < cols.size(); ++j) {
        const std::string key = fmt::format("{},{}", rows[i], cols[j]);
        const auto& cells = set.accuracy.at(configs[k]);
        const auto it = cells.find(key);
        if (it == cells.end())
          continue;
        const double m = it->second.median;
        const int r = static_cast<int>(std::lround(255 - (255 - 33) * m)),
                  g = static_cast<int>(std::lround(255 - (255 - 102) * m)),
                  b = static_cast<int>(std::lround(255 - (255 - 172) * m));
        s += fmt::format(
            "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
            "fill=\"#{:02x}{:02x}{:02x}\"/>\n",
            left + cw * j,
            y0 + ch * i,
            cw,
            ch,
            r,
            g,
            b);
        s += fmt::format(
            "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n",
            left + cw * (j + 0.5),
            y0 + ch * (i + 0.5) + 4,
            m > 0.6 ? "#ffffff" : "#000000",
            figure_text(m));
        for (const auto& mk : marks) {
          if (mk.config == configs[k] && mk.cell == key) {
            s += fmt::format(
                "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
                "stroke=\"#000000\" stroke-width=\"2\"><title>the paper: {}</title></rect>\n",
                left + cw * j + 1,
                y0 + ch * i + 1,
                cw - 2,
                ch - 2,
                figure_text(mk.value));
          }
        }
      }
    }
    const auto tr = set.source.trained.find(ax[0]), tc = set.source.trained.find(ax[1]);
    if (tr != set.source.trained.end() && tc != set.source.trained.end()) {
      auto row_of = [&](int64_t v) {
        return double(std::lower_bound(rows.begin(), rows.end(), v) - rows.begin());
      };
      auto col_of = [&](int64_t v) {
        return double(std::lower_bound(cols.begin(), cols.end(), v) - cols.begin());
      };
      const double r0 = row_of(tr->second.first), r1 = row_of(tr->second.second + 1);
      const double c0 = col_of(tc->second.first), c1 = col_of(tc->second.second + 1);
      if (r1 > r0 && c1 > c0) {
        s += fmt::format(
            "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
            "stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"4 3\"/>\n",
            left + cw * c0,
            y0 + ch * r0,
            cw * (c1 - c0),
            ch * (r1 - r0));
      }
    }
  }
  s += "</svg>\n";
  return s;
}

}  // namespace lengen::charts
