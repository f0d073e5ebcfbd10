// The claim rows of docs/results.md, filled from the reproduction page's data
// (render_reproductions' sibling: the same rows, in the results' own tables).
#include "charts.h"
#include "page_text.h"

#include "lengen/core/error.h"
#include "lengen/report/reproduction.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace lengen {

using charts::figure_text;
using namespace page;

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
