// The reproduction page as files: reproductions.md, a self-contained reproductions.html (tables,
// and the pictures inlined as data URIs) and one SVG picture per data set. Everything is a
// function of the page's data: the same data give the same bytes (no dates, no host names, a
// fixed number format), which is what lets a test hold the committed page to its data.
#include "charts.h"

#include "lengen/core/error.h"
#include "lengen/report/reproduction.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

namespace lengen {

namespace {

using charts::coordinates;
using charts::figure_text;
using charts::heatmaps;
using charts::line_chart;
using charts::Marker;
using charts::xml;

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

namespace {

// What both forms of the page are made of.
struct Page {
  const ReproductionPage& page;
  const std::vector<ClaimRow>& rows;
  std::vector<Section> sections;
  std::map<std::string, std::string> pictures;  // data set -> SVG
  Counts all;
  std::map<std::string, Counts> per_paper;
  int threshold;     // page.threshold in percent
  std::string rule;  // how to read a row (Markdown)

  const Counts& counts(const std::string& paper) const {
    static const Counts none;
    auto it = per_paper.find(paper);
    return it == per_paper.end() ? none : it->second;
  }
};

int percent(double fraction) {
  return static_cast<int>(std::lround(100 * fraction));
}

// The pictures: one per data set, of the configurations the page's claims name (all of a
// sweep's); a data set with no configuration of two cells or more has none.
std::map<std::string, std::string> draw_pictures(const ReproductionPage& page,
                                                 const std::vector<ClaimRow>& rows) {
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
  }

  return pictures;
}

// "How to read a row", in Markdown.
std::string reading_rule(const ReproductionPage& page) {
  const int threshold = percent(page.threshold);
  return fmt::format(
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
}

// reproductions.md.
std::string markdown_page(const Page& p) {
  const ReproductionPage& page = p.page;
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
  m += p.rule + "\n\n";
  m += fmt::format("**{} claims**: {} reproduce, {} direction only, {} do not{}.\n\n",
                   p.rows.size(),
                   p.all.reproduces,
                   p.all.direction,
                   p.all.does_not,
                   p.all.none ? fmt::format(", {} without a figure to compare", p.all.none) : "");
  m += "| paper | claims | reproduces | direction only | does not | no figure to compare |\n"
       "| --- | --- | --- | --- | --- | --- |\n";
  for (const auto& s : p.sections) {
    const Counts& c = p.counts(s.paper->key);
    m += fmt::format("| [{}](#{}) | {} | {} | {} | {} | {} |\n",
                     md(s.paper->short_name()),
                     anchor(heading_of(*s.paper)),
                     s.rows.size(),
                     c.reproduces,
                     c.direction,
                     c.does_not,
                     c.none);
  }
  for (const auto& s : p.sections) {
    m += fmt::format("\n## {}\n\n", heading_of(*s.paper));
    if (!s.paper->arxiv.empty())
      m += arxiv_link(*s.paper, false) + "\n\n";
    m += fmt::format(
        "| claim | cell | paper | lengen | median [min, max] | >= {}% | seeds | protocol | "
        "verdict | "
        "command | time | kernels |\n",
        p.threshold);
    m += "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for (const ClaimRow* r : s.rows) {
      const Claim& c = r->claim;
      const DataSet& set = page.data.at(c.data);
      const std::string claim = c.results.empty()
                                    ? md(c.where)
                                    : fmt::format("[{}](results.md#{})", md(c.where), c.results);
      const std::string protocol = c.protocol.empty() ? "the paper's" : md(join(c.protocol, "; "));
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
      if (!p.pictures.count(set))
        continue;
      m += fmt::format("\n![{}]({})\n\n*{}: {}.*\n",
                       set,
                       picture_name(set),
                       set,
                       md(provenance_of(page.data.at(set).source)));
    }
  }
  return m;
}

// reproductions.html: the same tables, the pictures inline.
std::string html_page(const Page& p) {
  const ReproductionPage& page = p.page;
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
  std::string rule_html = xml(p.rule);
  for (const char* mark : {"**", "*"}) {  // the rule's emphasis, as HTML
    const std::string tag = std::string(mark) == "**" ? "b" : "i";
    bool open = false;
    for (size_t pos; (pos = rule_html.find(mark)) != std::string::npos; open = !open) {
      rule_html.replace(pos, std::string(mark).size(), open ? "</" + tag + ">" : "<" + tag + ">");
    }
  }
  h += "<p>" + rule_html + "</p>\n";
  h += fmt::format("<p><b>{} claims</b>: {} reproduce, {} direction only, {} do not{}.</p>\n",
                   p.rows.size(),
                   p.all.reproduces,
                   p.all.direction,
                   p.all.does_not,
                   p.all.none ? fmt::format(", {} without a figure to compare", p.all.none) : "");
  h += "<table id=\"summary\">\n<tr><th>paper</th><th>claims</th><th>reproduces</th><th>direction "
       "only</th>"
       "<th>does not</th><th>no figure to compare</th></tr>\n";
  for (const auto& s : p.sections) {
    const Counts& c = p.counts(s.paper->key);
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
  for (const auto& s : p.sections) {
    h += fmt::format(
        "<h2 id=\"{}\">{}</h2>\n", anchor(heading_of(*s.paper)), xml(heading_of(*s.paper)));
    if (!s.paper->arxiv.empty())
      h += "<p>" + arxiv_link(*s.paper, true) + "</p>\n";
    h += fmt::format(
        "<table class=\"claims\">\n<tr><th>claim</th><th>cell</th><th>paper</th><th>lengen</th>"
        "<th>median [min, max]</th><th>&gt;= "
        "{}%</th><th>seeds</th><th>protocol</th><th>verdict</th>"
        "<th>command</th><th>time</th><th>kernels</th></tr>\n",
        p.threshold);
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
      if (!p.pictures.count(set))
        continue;
      std::string caption = xml(provenance_of(page.data.at(set).source));
      for (bool open = false; caption.find('`') != std::string::npos; open = !open) {
        caption.replace(caption.find('`'), 1, open ? "</code>" : "<code>");
      }
      h += fmt::format(
          "<figure><img class=\"plot\" alt=\"{}\" src=\"data:image/svg+xml;base64,{}\">"
          "<figcaption>{}: {}.</figcaption></figure>\n",
          xml(set),
          base64(p.pictures.at(set)),
          xml(set),
          caption);
    }
  }
  h += "</body>\n</html>\n";
  return h;
}

}  // namespace

std::map<std::string, std::string> render_reproductions(const ReproductionPage& page,
                                                        bool markdown) {
  const std::vector<ClaimRow> rows = claim_rows(page);
  Page p{page,
         rows,
         sections_of(page, rows),
         draw_pictures(page, rows),
         {},
         {},
         percent(page.threshold),
         reading_rule(page)};
  for (const auto& r : rows) {
    p.all.add(r.verdict);
    p.per_paper[r.claim.paper].add(r.verdict);
  }
  std::map<std::string, std::string> files;
  if (markdown) {
    for (const auto& [name, svg] : p.pictures)
      files[picture_name(name)] = svg;
    files["reproductions.md"] = markdown_page(p);
  }
  files["reproductions.html"] = html_page(p);
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
