#pragma once
// The reproduction page's pictures as SVG (reproduction_page.cpp writes them) and the helpers
// the page and the pictures share. Not installed.
#include "lengen/report/reproduction.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lengen::charts {

/// A figure the paper gives for a configuration's cell (a diamond on the pictures).
struct Marker {
  std::string config, cell;
  double value;
};

/// `s` with &, <, > and " escaped for XML.
std::string xml(const std::string& s);

/// An accuracy in [0, 1] as the page writes it: a percentage with one decimal, "97.5" (a
/// whole number without it, "100"); "-" for NaN.
std::string figure_text(double x);

/// A cell key "10,3" as its coordinates.
std::vector<int64_t> coordinates(const std::string& key);

/// Accuracy over the first axis: per configuration the median over seeds and the band from the
/// lowest to the highest seed; the paper's figures as diamonds; the trained range shaded.
std::string line_chart(const DataSet& set,
                       const std::vector<std::string>& configs,
                       const std::vector<Marker>& marks);

/// Two axes: per configuration a heatmap of the median over seeds (rows: the first axis,
/// columns: the second), the paper's cells outlined, the trained region dashed.
std::string heatmaps(const DataSet& set,
                     const std::vector<std::string>& configs,
                     const std::vector<Marker>& marks);

}  // namespace lengen::charts
