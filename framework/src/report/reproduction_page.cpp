// The reproduction page as files: reproductions.md, a self-contained reproductions.html (tables,
// and the pictures inlined as data URIs) and one SVG picture per data set. Everything is a
// function of the page's data: the same data give the same bytes (no dates, no host names, a
// fixed number format), which is what lets a test hold the committed page to its data.
#include "lengen/core/error.h"
#include "lengen/report/reproduction.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

namespace lengen {

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

// A Markdown table cell: pipes escaped, no line breaks.
std::string md(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string base64(const std::string& in) {
  static const char* const table =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s : {18, 12, 6, 0})
      out += table[(n >> s) & 63];
  }
  if (i + 1 == in.size()) {
    const uint32_t n = uint8_t(in[i]) << 16;
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += table[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

std::string figure_text(double x) {
  if (std::isnan(x))
    return "-";
  const std::string s = fmt::format("{:.1f}", 100 * x);
  return s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0 ? s.substr(0, s.size() - 2) : s;
}

// The paper's number as the paper writes it (up to two decimals), ">= " for a lower bound.
std::string paper_text(const Claim& c) {
  if (std::isnan(c.value))
    return "-";
  std::string s = fmt::format("{:.2f}", 100 * c.value);
  while (s.back() == '0')
    s.pop_back();
  if (s.back() == '.')
    s.pop_back();
  return (c.at_least ? ">= " : "") + s;
}

std::vector<int64_t> coordinates(const std::string& key) {
  std::vector<int64_t> v;
  std::stringstream ss(key);
  for (std::string part; std::getline(ss, part, ',');)
    v.push_back(std::stoll(part));
  return v;
}

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-')
    out.pop_back();
  return out;
}

// The anchor GitHub gives a Markdown heading: lower case, every character but letters, digits,
// spaces, '-' and '_' dropped, each space a '-' ("Duan & Shi 2023: X" -> "duan--shi-2023-x").
std::string anchor(const std::string& heading) {
  std::string out;
  for (char c : heading) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_')
      out += static_cast<char>(std::tolower(u));
    else if (c == ' ')
      out += '-';
    else if (u >= 0x80)
      out += c;  // non-ASCII letters stay, as GitHub keeps them
  }
  return out;
}

std::string seconds_text(double s) {
  if (s < 600)
    return fmt::format("{:.0f} s", s);
  if (s < 7200)
    return fmt::format("{:.0f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

std::string time_of(const DataRecord& s) {
  std::string t = s.time;
  if (t.empty() && !s.seconds.empty()) {
    std::vector<double> v = s.seconds;
    std::sort(v.begin(), v.end());
    const double median =
        v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    t = v.size() == 1 ? seconds_text(median) + " a run"
                      : fmt::format("{} a run ({} to {})",
                                    seconds_text(median),
                                    seconds_text(v.front()),
                                    seconds_text(v.back()));
  }
  if (t.empty())
    return "not recorded";
  return s.threads > 0 ? fmt::format("{}, {} thread{}", t, s.threads, s.threads > 1 ? "s" : "") : t;
}

std::string provenance_of(const DataRecord& s) {
  std::vector<std::string> parts;
  if (!s.file.empty())
    parts.push_back("`" + s.file + "`");
  if (!s.measured.empty())
    parts.push_back("measured " + s.measured);
  if (!s.commit.empty())
    parts.push_back("build " + s.commit);
  std::string machine = s.machine;
  if (!s.kernels.empty())
    machine += (machine.empty() ? "" : ", ") + s.kernels + " kernels";
  if (!machine.empty())
    parts.push_back(machine);
  parts.push_back(s.origin == "transcribed" ? "figures transcribed from the run record"
                                            : "collected from the sweep");
  std::string out = join(parts, "; ");
  if (!s.note.empty())
    out += ". " + s.note;
  return out;
}

// ---------------------------------------------------------------------------------------
// Pictures

struct Marker {
  std::string config, cell;
  double value;
};

// Accuracy over the first axis: per configuration the median over seeds and the band from the
// lowest to the highest seed; the paper's figures as diamonds; the trained range shaded.
std::string line_chart(const DataSet& set,
                       const std::vector<std::string>& configs,
                       const std::vector<Marker>& marks) {
  const double W = 720, H = 300, left = 48, right = 200, top = 28, bottom = 40;
  const double pw = W - left - right, ph = H - top - bottom;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (const auto& c : configs) {
    for (const auto& [cell, f] : set.accuracy.at(c)) {
      lo = std::min(lo, coordinates(cell)[0]);
      hi = std::max(hi, coordinates(cell)[0]);
    }
  }
  if (lo == hi) {
    --lo;
    ++hi;
  }
  auto X = [&](double v) { return left + pw * (v - lo) / double(hi - lo); };
  auto Y = [&](double a) { return top + ph * (1 - a); };
  const std::string axis = set.source.cell_axes.front();
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" viewBox=\"0 0 "
      "{:.0f} {:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<title>{}</title>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n",
      W,
      H,
      W,
      H,
      xml(set.source.name));
  if (auto t = set.source.trained.find(axis); t != set.source.trained.end()) {
    const double a = std::max<double>(lo, t->second.first - 0.5),
                 b = std::min<double>(hi, t->second.second + 0.5);
    if (b > a) {
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#eeeeee\"/>\n",
          X(a),
          top,
          X(b) - X(a),
          ph);
      s += fmt::format(
          "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#777777\">trained</text>\n", X(a) + 3, top + 12);
    }
  }
  for (int g = 0; g <= 4; ++g) {
    const double y = Y(g / 4.0);
    s += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#cccccc\"/>\n",
        left,
        y,
        left + pw,
        y);
    s += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 4, y + 4, 25 * g);
  }
  const int64_t span = hi - lo, step = std::max<int64_t>(1, (span + 11) / 12);
  for (int64_t v = lo; v <= hi; v += step) {
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                     X(v),
                     top + ph + 14,
                     v);
  }
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                   left + pw / 2,
                   H - 6,
                   xml(axis));
  s += fmt::format(
      "<text x=\"12\" y=\"{:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 12 "
      "{:.1f})\">exact match "
      "%</text>\n",
      top + ph / 2,
      top + ph / 2);
  s += fmt::format(
      "<text x=\"{:.1f}\" y=\"16\" font-size=\"13\">{}</text>\n", left, xml(set.source.name));
  for (size_t i = 0; i < configs.size(); ++i) {
    const std::string color = kPalette[i % std::size(kPalette)];
    std::vector<std::pair<int64_t, const CellFigures*>> points;
    for (const auto& [cell, f] : set.accuracy.at(configs[i]))
      points.emplace_back(coordinates(cell)[0], &f);
    std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) {
      return a.first < b.first;
    });
    std::string band, up, line;
    auto or_median = [](double v, const CellFigures* f) { return std::isnan(v) ? f->median : v; };
    for (const auto& [x, f] : points)
      up += fmt::format("{:.1f},{:.1f} ", X(x), Y(or_median(f->max, f)));
    for (auto it = points.rbegin(); it != points.rend(); ++it) {
      band +=
          fmt::format("{:.1f},{:.1f} ", X(it->first), Y(or_median(it->second->min, it->second)));
    }
    for (const auto& [x, f] : points)
      line += fmt::format("{:.1f},{:.1f} ", X(x), Y(f->median));
    s += fmt::format(
        "<polygon points=\"{}{}\" fill=\"{}\" fill-opacity=\"0.15\" stroke=\"none\"/>\n",
        up,
        band,
        color);
    s += fmt::format(
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", line, color);
    const double ly = top + 8 + 16 * i;
    std::string label = configs[i].size() > 30 ? configs[i].substr(0, 29) + "..." : configs[i];
    s += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"3\"/>\n",
        left + pw + 10,
        ly,
        left + pw + 26,
        ly,
        color);
    s += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", left + pw + 30, ly + 4, xml(label));
    for (const auto& m : marks) {
      if (m.config != configs[i] || std::isnan(m.value))
        continue;
      const double x = X(coordinates(m.cell)[0]), y = Y(m.value);
      s += fmt::format(
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
          color);
    }
  }
  const double ly = top + 8 + 16 * configs.size() + 6;
  const double lx = left + pw + 18;
  s += fmt::format(
      "<polygon points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" "
      "fill=\"#ffffff\" "
      "stroke=\"#000000\"/>\n",
      lx,
      ly - 6,
      lx + 6,
      ly,
      lx,
      ly + 6,
      lx - 6,
      ly);
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">the paper</text>\n", left + pw + 30, ly + 4);
  s += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#555555\">line: median; band: seeds' range</text>\n",
      left + pw + 10,
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

// ---------------------------------------------------------------------------------------
// The page

struct Section {
  const Paper* paper;
  std::vector<const ClaimRow*> rows;
  std::vector<std::string> sets;  // data sets in first-use order
};

std::vector<Section> sections_of(const ReproductionPage& page, const std::vector<ClaimRow>& rows) {
  std::vector<Section> out;
  for (const auto& key : page.paper_order) {
    Section s{&page.papers.at(key), {}, {}};
    for (const auto& r : rows) {
      if (r.claim.paper != key)
        continue;
      s.rows.push_back(&r);
      if (std::find(s.sets.begin(), s.sets.end(), r.claim.data) == s.sets.end())
        s.sets.push_back(r.claim.data);
    }
    if (!s.rows.empty())
      out.push_back(s);
  }
  return out;
}

std::string picture_name(const std::string& set) {
  return "img/reproductions/" + slug(set) + ".svg";
}

std::string heading_of(const Paper& p) {
  std::string h = p.short_name();
  if (!p.title.empty())
    h += ": " + p.title;
  return h;
}

std::string arxiv_link(const Paper& p, bool html) {
  if (p.arxiv.empty())
    return "";
  const std::string url = "https://arxiv.org/abs/" + p.arxiv;
  return html ? fmt::format("<a href=\"{}\">arXiv:{}</a>", url, p.arxiv)
              : fmt::format("[arXiv:{}]({})", p.arxiv, url);
}

struct Counts {
  int reproduces = 0, direction = 0, does_not = 0, none = 0;

  void add(const std::string& v) {
    if (v == "reproduces")
      ++reproduces;
    else if (v == "direction only")
      ++direction;
    else if (v == "does not")
      ++does_not;
    else
      ++none;  // no paper figure, or not recorded in the paper's statistic
  }
};

// "2/3": how many seeds reach the threshold; "-" where the record has not every seed.
std::string seeds_at_least(const ClaimRow& r) {
  if (std::isnan(r.above))
    return "-";
  return fmt::format(
      "{}/{}", static_cast<int>(std::lround(r.above * static_cast<double>(r.seeds))), r.seeds);
}

std::string cell_text(const DataSet& set, const std::string& key) {
  const auto xy = coordinates(key);
  std::vector<std::string> parts;
  for (size_t i = 0; i < xy.size() && i < set.source.cell_axes.size(); ++i) {
    parts.push_back(fmt::format("{}={}", set.source.cell_axes[i], xy[i]));
  }
  return join(parts, ",");
}

}  // namespace

std::map<std::string, std::string> render_reproductions(const ReproductionPage& page,
                                                        bool markdown) {
  const std::vector<ClaimRow> rows = claim_rows(page);
  const std::vector<Section> sections = sections_of(page, rows);
  std::map<std::string, std::string> files;

  // Pictures: one per data set, of the configurations the page's claims name (all of a sweep's).
  std::map<std::string, std::string> pictures;
  for (const auto& [name, set] : page.data) {
    std::vector<std::string> configs;
    std::vector<Marker> marks;
    for (const auto& c : set.configs) {
      for (const auto& r : rows) {
        if (r.claim.data == name && r.claim.config == c) {
          if (std::find(configs.begin(), configs.end(), c) == configs.end())
            configs.push_back(c);
          marks.push_back({c, r.claim.cell, r.claim.value});
        }
      }
    }
    // A line or a map needs two cells of one configuration; a single cell is the table's row.
    bool drawable = false;
    for (const auto& c : configs)
      drawable = drawable || set.accuracy.at(c).size() > 1;
    if (!drawable)
      continue;
    pictures[name] = set.source.cell_axes.size() == 1 ? line_chart(set, configs, marks)
                                                      : heatmaps(set, configs, marks);
    if (markdown)
      files[picture_name(name)] = pictures[name];
  }

  Counts all;
  std::map<std::string, Counts> per_paper;
  for (const auto& r : rows) {
    all.add(r.verdict);
    per_paper[r.claim.paper].add(r.verdict);
  }
  const int threshold = static_cast<int>(std::lround(100 * page.threshold));
  const std::string rule = fmt::format(
      "**How to read a row.** *paper* is the paper's number in its own statistic over its seeds "
      "(median, mean or the "
      "best seed); *lengen* is lengen's figure in that same statistic over its seeds, then its "
      "median [min, max]; "
      "*>= {0}%* is the fraction of lengen's seeds at or above {0}%. The verdict is a rule, not a "
      "judgement: "
      "**reproduces** when lengen's figure is within {1} points of the paper's; **direction only** "
      "when it is not, but "
      "the comparison the paper makes (the row named in *versus*) goes the paper's way in lengen "
      "too; **does not** "
      "otherwise. *protocol* names every way the measurement departs from the paper's (encoding, "
      "sampler, model size, "
      "steps, scale); the paper's number is kept as the paper gives it, at its own scale. Exact "
      "match is of the whole "
      "response under greedy decoding unless the protocol says otherwise. *time* is wall time a "
      "run on 2 CPU cores.",
      threshold,
      figure_text(page.tolerance));

  // Markdown ------------------------------------------------------------------------------
  if (markdown) {
    std::string m = fmt::format("# {}\n\n", page.title);
    m += fmt::format(
        "<!-- Generated by `{}` from docs/data/ (claims.yaml and one folder per data set): edit "
        "the data "
        "and regenerate; a test holds this file to the data. -->\n\n",
        page.generator);
    m += "One row per claim of a paper (a cell of a table or figure): the paper's number beside "
         "lengen's over seeds, "
         "with the command that measures it. docs/results.md discusses each claim; "
         "docs/data/README.md says how the "
         "data get here. The same page with its pictures inline: "
         "[reproductions.html](reproductions.html).\n\n";
    m += rule + "\n\n";
    m += fmt::format("**{} claims**: {} reproduce, {} direction only, {} do not{}.\n\n",
                     rows.size(),
                     all.reproduces,
                     all.direction,
                     all.does_not,
                     all.none ? fmt::format(", {} without a figure to compare", all.none) : "");
    m += "| paper | claims | reproduces | direction only | does not | no figure to compare |\n"
         "| --- | --- | --- | --- | --- | --- |\n";
    for (const auto& s : sections) {
      const Counts& c = per_paper[s.paper->key];
      m += fmt::format("| [{}](#{}) | {} | {} | {} | {} | {} |\n",
                       md(s.paper->short_name()),
                       anchor(heading_of(*s.paper)),
                       s.rows.size(),
                       c.reproduces,
                       c.direction,
                       c.does_not,
                       c.none);
    }
    for (const auto& s : sections) {
      m += fmt::format("\n## {}\n\n", heading_of(*s.paper));
      if (!s.paper->arxiv.empty())
        m += arxiv_link(*s.paper, false) + "\n\n";
      m += fmt::format(
          "| claim | cell | paper | lengen | median [min, max] | >= {}% | seeds | protocol | "
          "verdict | "
          "command | time | kernels |\n",
          threshold);
      m += "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
      for (const ClaimRow* r : s.rows) {
        const Claim& c = r->claim;
        const DataSet& set = page.data.at(c.data);
        const std::string claim = c.results.empty()
                                      ? md(c.where)
                                      : fmt::format("[{}](results.md#{})", md(c.where), c.results);
        const std::string protocol =
            c.protocol.empty() ? "the paper's" : md(join(c.protocol, "; "));
        const std::string versus = c.versus.empty() ? "" : " (versus " + c.versus + ")";
        m += fmt::format(
            "| {} | {} | {} ({}) | {} | {} [{}, {}] | {} | {} | {} | **{}**{} | `{}` | {} | {} |\n",
            claim,
            cell_text(set, c.cell),
            paper_text(c),
            c.statistic,
            figure_text(r->ours),
            figure_text(r->median),
            figure_text(r->min),
            figure_text(r->max),
            seeds_at_least(*r),
            r->seeds,
            protocol,
            r->verdict,
            md(versus),
            md(c.command),
            md(time_of(set.source)),
            set.source.kernels.empty() ? "-" : md(set.source.kernels));
      }
      for (const auto& set : s.sets) {
        if (!pictures.count(set))
          continue;
        m += fmt::format("\n![{}]({})\n\n*{}: {}.*\n",
                         set,
                         picture_name(set),
                         set,
                         md(provenance_of(page.data.at(set).source)));
      }
    }
    files["reproductions.md"] = m;
  }

  // HTML ----------------------------------------------------------------------------------
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += fmt::format("<title>{}</title>\n", xml(page.title));
  h += "<style>\n"
       "body{font-family:sans-serif;max-width:1400px;margin:2em auto;padding:0 "
       "1em;color:#222;line-height:1.4}\n"
       "table{border-collapse:collapse;margin:1em 0;font-size:13px}\n"
       "th,td{border:1px solid #ccc;padding:4px 6px;vertical-align:top;text-align:left}\n"
       "th{background:#f3f3f3}\ncode{font-size:12px;background:#f6f6f6}\n"
       ".reproduces{background:#d9f2d9}\n.direction-only{background:#fff2cc}\n.does-not{background:"
       "#f8d7d7}\n"
       ".num{text-align:right;white-space:nowrap}\nfigure{margin:1em "
       "0}\nfigcaption{font-size:12px;color:#555}\n"
       "</style>\n</head>\n<body>\n";
  h += fmt::format("<h1>{}</h1>\n", xml(page.title));
  h += fmt::format(
      "<p>Generated by <code>{}</code>; every figure is read from the data, the same data give "
      "this file "
      "byte for byte.</p>\n",
      xml(page.generator));
  std::string rule_html = xml(rule);
  for (const char* mark : {"**", "*"}) {  // the rule's emphasis, as HTML
    const std::string tag = std::string(mark) == "**" ? "b" : "i";
    bool open = false;
    for (size_t pos; (pos = rule_html.find(mark)) != std::string::npos; open = !open) {
      rule_html.replace(pos, std::string(mark).size(), open ? "</" + tag + ">" : "<" + tag + ">");
    }
  }
  h += "<p>" + rule_html + "</p>\n";
  h += fmt::format("<p><b>{} claims</b>: {} reproduce, {} direction only, {} do not{}.</p>\n",
                   rows.size(),
                   all.reproduces,
                   all.direction,
                   all.does_not,
                   all.none ? fmt::format(", {} without a figure to compare", all.none) : "");
  h += "<table id=\"summary\">\n<tr><th>paper</th><th>claims</th><th>reproduces</th><th>direction "
       "only</th>"
       "<th>does not</th><th>no figure to compare</th></tr>\n";
  for (const auto& s : sections) {
    const Counts& c = per_paper[s.paper->key];
    h += fmt::format(
        "<tr><td><a href=\"#{}\">{}</a></td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
        anchor(heading_of(*s.paper)),
        xml(s.paper->short_name()),
        s.rows.size(),
        c.reproduces,
        c.direction,
        c.does_not,
        c.none);
  }
  h += "</table>\n";
  for (const auto& s : sections) {
    h += fmt::format(
        "<h2 id=\"{}\">{}</h2>\n", anchor(heading_of(*s.paper)), xml(heading_of(*s.paper)));
    if (!s.paper->arxiv.empty())
      h += "<p>" + arxiv_link(*s.paper, true) + "</p>\n";
    h += fmt::format(
        "<table class=\"claims\">\n<tr><th>claim</th><th>cell</th><th>paper</th><th>lengen</th>"
        "<th>median [min, max]</th><th>&gt;= "
        "{}%</th><th>seeds</th><th>protocol</th><th>verdict</th>"
        "<th>command</th><th>time</th><th>kernels</th></tr>\n",
        threshold);
    for (const ClaimRow* r : s.rows) {
      const Claim& c = r->claim;
      const DataSet& set = page.data.at(c.data);
      const std::string claim =
          c.results.empty()
              ? xml(c.where)
              : fmt::format("<a href=\"results.md#{}\">{}</a>", xml(c.results), xml(c.where));
      h += fmt::format(
          "<tr class=\"claim\" id=\"claim-{}\"><td>{}</td><td>{}</td><td class=\"num\">{} ({})</td>"
          "<td class=\"num\">{}</td><td class=\"num\">{} [{}, {}]</td><td class=\"num\">{}</td><td "
          "class=\"num\">{}</td>"
          "<td>{}</td><td "
          "class=\"{}\"><b>{}</b>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>\n",
          xml(slug(c.id)),
          claim,
          xml(cell_text(set, c.cell)),
          xml(paper_text(c)),
          c.statistic,
          figure_text(r->ours),
          figure_text(r->median),
          figure_text(r->min),
          figure_text(r->max),
          seeds_at_least(*r),
          r->seeds,
          c.protocol.empty() ? "the paper's" : xml(join(c.protocol, "; ")),
          slug(r->verdict),
          r->verdict,
          c.versus.empty() ? "" : " (versus " + xml(c.versus) + ")",
          xml(c.command),
          xml(time_of(set.source)),
          set.source.kernels.empty() ? "-" : xml(set.source.kernels));
    }
    h += "</table>\n";
    for (const auto& set : s.sets) {
      if (!pictures.count(set))
        continue;
      std::string caption = xml(provenance_of(page.data.at(set).source));
      for (bool open = false; caption.find('`') != std::string::npos; open = !open) {
        caption.replace(caption.find('`'), 1, open ? "</code>" : "<code>");
      }
      h += fmt::format(
          "<figure><img class=\"plot\" alt=\"{}\" src=\"data:image/svg+xml;base64,{}\">"
          "<figcaption>{}: {}.</figcaption></figure>\n",
          xml(set),
          base64(pictures[set]),
          xml(set),
          caption);
    }
  }
  h += "</body>\n</html>\n";
  files["reproductions.html"] = h;
  return files;
}

std::string fill_claim_rows(const std::string& text,
                            const ReproductionPage& page,
                            const std::string& name) {
  const std::vector<ClaimRow> rows = claim_rows(page);
  std::map<std::string, const ClaimRow*> by_id;
  for (const auto& r : rows)
    by_id[r.claim.id] = &r;
  const std::string open = "<!-- claims:", close = "<!-- /claims -->";
  const int threshold = static_cast<int>(std::lround(100 * page.threshold));
  std::string out;
  size_t pos = 0;
  auto line_of = [&](size_t at) {
    return 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  };
  for (size_t start; (start = text.find(open, pos)) != std::string::npos;) {
    const size_t head_end = text.find("-->", start);
    LENGEN_CHECK(head_end != std::string::npos,
                 "{}:{}: '{}' is not closed with -->",
                 name,
                 line_of(start),
                 open);
    const size_t end = text.find(close, head_end);
    LENGEN_CHECK(end != std::string::npos,
                 "{}:{}: a claims block without its '{}'",
                 name,
                 line_of(start),
                 close);
    std::stringstream ids(text.substr(start + open.size(), head_end - start - open.size()));
    std::string table = fmt::format(
        "\n| claim | cell | paper | lengen | median [min, max] | >= {}% | kernels | verdict |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- |\n",
        threshold);
    for (std::string id; ids >> id;) {
      const auto it = by_id.find(id);
      LENGEN_CHECK(it != by_id.end(),
                   "{}:{}: claim '{}' is not in the data's claims.yaml",
                   name,
                   line_of(start),
                   id);
      const ClaimRow& r = *it->second;
      const Claim& c = r.claim;
      const DataSet& set = page.data.at(c.data);
      table += fmt::format(
          "| {}: {} ([row](reproductions.md#{})) | {} | {} ({}) | {} | {} [{}, {}] | {} | {} | "
          "**{}** |\n",
          md(page.papers.at(c.paper).short_name()),
          md(c.where),
          anchor(heading_of(page.papers.at(c.paper))),
          cell_text(set, c.cell),
          paper_text(c),
          c.statistic,
          figure_text(r.ours),
          figure_text(r.median),
          figure_text(r.min),
          figure_text(r.max),
          seeds_at_least(r),
          set.source.kernels.empty() ? "-" : md(set.source.kernels),
          r.verdict);
    }
    out += text.substr(pos, head_end + 3 - pos) + table + "\n";
    pos = end;
  }
  return out + text.substr(pos);
}

}  // namespace lengen
