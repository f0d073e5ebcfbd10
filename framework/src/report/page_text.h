#pragma once
// The reproduction page's text: what its Markdown and HTML forms, and the claim rows of
// docs/results.md, write about papers, claims and data sets (reproduction_page.cpp,
// claim_rows.cpp). Not installed.
#include "lengen/report/reproduction.h"

#include <string>
#include <vector>

namespace lengen::page {

/// One paper's part of the page: its claim rows and the data sets they read.
struct Section {
  const Paper* paper;
  std::vector<const ClaimRow*> rows;
  std::vector<std::string> sets;  // data sets in first-use order
};

/// Claim rows by verdict.
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

/// A Markdown table cell: pipes escaped, no line breaks.
std::string md(const std::string& s);

/// `in` in base64 (the HTML page's inline pictures).
std::string base64(const std::string& in);

/// The paper's number as the paper writes it (up to two decimals), ">= " for a lower bound.
std::string paper_text(const Claim& c);

/// `s` as a file or id name: lower-case letters, digits and single '-'.
std::string slug(const std::string& s);

/// The anchor GitHub gives a Markdown heading: lower case, every character but letters, digits,
/// spaces, '-' and '_' dropped, each space a '-' ("Duan & Shi 2023: X" -> "duan--shi-2023-x").
std::string anchor(const std::string& heading);

/// A duration: "45 s" (under 10 minutes), "12 min" (under 2 hours), "1.5 h".
std::string seconds_text(double s);

/// A data set's time a run (its median over runs, with the range) and threads.
std::string time_of(const DataRecord& s);

/// Where a data set's figures come from (machine, date, commit, command), for a caption.
std::string provenance_of(const DataRecord& s);

/// The page's sections, in the papers' order, each with its rows; papers without one left out.
std::vector<Section> sections_of(const ReproductionPage& page, const std::vector<ClaimRow>& rows);

/// The picture of data set `set`, relative to docs/.
std::string picture_name(const std::string& set);

/// "Authors Year: Title".
std::string heading_of(const Paper& p);

/// A link to the paper's arXiv page, in HTML or Markdown; "" without one.
std::string arxiv_link(const Paper& p, bool html);

/// "2/3": how many seeds reach the threshold; "-" where the record has not every seed.
std::string seeds_at_least(const ClaimRow& r);

/// A cell as "digits=20" or "digits=10,operands=3".
std::string cell_text(const DataSet& set, const std::string& key);

}  // namespace lengen::page
