// The reproduction page's text (page_text.h).
#include "page_text.h"

#include "charts.h"

#include "lengen/core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace lengen::page {

using charts::coordinates;

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

}  // namespace lengen::page
