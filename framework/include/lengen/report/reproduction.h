#pragma once

// The reproduction page: one row per paper claim (a table or figure cell), lengen's figures
// over seeds beside the paper's number, a verdict by a stated rule, and a picture per data
// set. `lengen report` builds docs/reproductions.md and docs/reproductions.html from the data
// kept in the repository (docs/data/claims.yaml and one folder per data set), or the same page
// for any sweep folder. Nothing here measures; it reads what sweeps wrote.
//
//   docs/data/claims.yaml            papers, then claims: which cell of which data set stands
//                                    beside which number of which paper (docs/data/README.md)
//   docs/data/<set>/results.csv      a sweep's aggregate/results.csv: one line per run and cell
//   docs/data/<set>/summary.csv      instead, where a record kept only the statistics: one line
//                                    per configuration and cell (seeds, median, min, max, mean)
//   docs/data/<set>/source.yaml      where it came from: the sweep file, commit, machine,
//                                    kernel set, threads, seconds per run, the trained range

#include "lengen/core/export.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lengen {

/// A paper the page cites.
struct Paper {
  std::string key;      ///< how claims name it, e.g. "cho2024"
  std::string authors;  ///< "Cho et al."
  int64_t year = 0;
  std::string title;
  std::string arxiv;  ///< "2405.20671"; "" when it has none

  /// "Cho et al. 2024", or the key where the paper has no authors (a sweep's cite).
  std::string short_name() const;
};

/// Where a data set's figures came from.
struct DataRecord {
  std::string name;  ///< the folder's name
  std::string file;  ///< the sweep or experiment file that measured it
  std::string
      origin;  ///< "collected" (`lengen report --collect`) or "transcribed" (from a dated record)
  std::string measured;         ///< date(s) of the runs
  std::string commit;           ///< source commit of the build (with "-dirty" where it had changes)
  std::string machine;          ///< processor
  std::string kernels;          ///< BLAS kernel set, e.g. "AVX2" or "AVX-512"
  int64_t threads = 0;          ///< threads each run computed with (0: not recorded)
  std::vector<double> seconds;  ///< wall time of each run (training and evaluation)
  std::string time;             ///< the time as text, where seconds were not recorded per run
  std::string note;             ///< anything a reader must know (e.g. what it was transcribed from)
  std::vector<std::string>
      cell_axes;  ///< the grid's axes, e.g. {"digits"} or {"digits", "operands"}
  /// The trained range per axis ({lo, hi}); plots shade it.
  std::map<std::string, std::pair<int64_t, int64_t>> trained;
};

/// lengen's figures at one cell of one configuration, over seeds. From a results.csv every
/// seed's figure is known; a summary.csv (a record that kept only the statistics) gives the
/// count and the median, and the lowest and highest seed and the mean where it has them (NaN
/// where not; with three seeds, the median, lowest and highest are every seed's figure).
struct CellFigures {
  std::vector<double> seeds;  ///< every seed's accuracy, ascending; empty where not recorded
  int64_t n = 0;              ///< how many seeds
  double median = 0, min = 0, max = 0, mean = 0;

  static CellFigures of_seeds(std::vector<double> accuracies);
  /// The figure in a paper's statistic ("median", "mean", "best"); NaN where not recorded.
  double in_statistic(const std::string& statistic) const;
  /// The fraction of seeds at or above `threshold`; NaN where the seeds are not all known.
  double fraction_at_least(double threshold) const;
};

/// lengen's figures of one data set: configuration -> cell key ("20", "10,5") -> figures.
struct DataSet {
  DataRecord source;
  std::map<std::string, std::map<std::string, CellFigures>> accuracy;
  std::vector<std::string> configs;  ///< in file order
  std::vector<std::string> cells;    ///< in file order
};

/// One row of the page: a paper's number at one cell of one configuration.
struct Claim {
  std::string id;
  std::string paper;      ///< a key of ReproductionPage::papers
  std::string where;      ///< the table or figure and its cell, in the paper's words
  std::string cell;       ///< the cell key in the data set ("20", "10,10")
  double value = 0;       ///< the paper's number in [0, 1]; NaN where it gives none
  bool at_least = false;  ///< the paper claims at least `value` (">= 67.8%"), not about it
  std::string statistic = "median";  ///< the paper's statistic over its seeds: median, mean or best
  std::string data;                  ///< the data set
  std::string config;                ///< its configuration ("" when it has one)
  std::vector<std::string>
      protocol;         ///< each deviation from the paper's protocol; empty: the paper's
  std::string command;  ///< the command that measures it
  std::string versus;   ///< another claim's id: the comparison the paper makes (direction)
  std::string results;  ///< where docs/results.md discusses it (an anchor, "" for none)
};

/// A claim with lengen's figures and the verdict.
struct ClaimRow {
  Claim claim;
  int64_t seeds = 0;
  double ours = 0;  ///< lengen in the paper's statistic
  double median = 0, min = 0, max = 0;
  double above = 0;     ///< fraction of seeds >= the page's threshold (NaN: not recorded)
  std::string verdict;  ///< "reproduces", "direction only", "does not", or "no paper figure"
};

struct ReproductionPage {
  std::string title = "What lengen reproduces";
  std::string generator = "lengen report";  ///< the command that regenerates it, for the header
  double threshold = 0.9;                   ///< a seed "succeeds" at a cell at or above this
  double tolerance = 0.1;  ///< |lengen - paper| within this (in the paper's statistic): reproduces
  std::map<std::string, Paper> papers;
  std::vector<std::string> paper_order;  ///< sections in this order
  std::vector<Claim> claims;
  std::map<std::string, DataSet> data;
};

/// Reads `<data_dir>/claims.yaml` and every data set it names (`<data_dir>/<set>/`). Errors
/// name the file, the line and the key or claim at fault.
LENGEN_API ReproductionPage load_reproductions(const std::string& data_dir);

/// Reads one data set folder (source.yaml, and results.csv or summary.csv).
LENGEN_API DataSet load_data_set(const std::string& folder);

/// The page of one sweep folder (sweep.json, aggregate/results.csv): a row per cell of each
/// `paper:` row, or, without one, a row per configuration and cell. `eval_name`: the runs'
/// evaluation `evals/NAME` instead (`lengen eval RUN --out NAME`, aggregated into
/// aggregate/evals/NAME by `lengen aggregate --eval NAME`).
LENGEN_API ReproductionPage sweep_reproductions(const std::string& sweep_dir,
                                                const std::string& eval_name = "");

/// lengen's figures and the verdict for every claim, in page order. The verdict: "reproduces"
/// where lengen's figure in the paper's statistic is within `tolerance` of the paper's (for an
/// `at_least` claim: no more than `tolerance` below it);
/// otherwise "direction only" where the claim has `versus` and lengen's difference between
/// the two has the paper's sign; otherwise "does not".
LENGEN_API std::vector<ClaimRow> claim_rows(const ReproductionPage& page);

/// The page's files: "reproductions.md", "reproductions.html" and the pictures
/// ("img/reproductions/<set>.svg"), relative to the folder they go in. `markdown` false: the
/// HTML alone.
LENGEN_API std::map<std::string, std::string> render_reproductions(const ReproductionPage& page,
                                                                   bool markdown = true);

/// `text` (a document, e.g. docs/results.md) with the rows of its claims filled in: every block
/// between `<!-- claims: ID ID ... -->` and `<!-- /claims -->` is replaced by a table of those
/// claims' rows, so that a section can open with its rows and never drift from the data.
/// `name` names the document in errors (an unknown id, a block left open).
LENGEN_API std::string fill_claim_rows(const std::string& text,
                                       const ReproductionPage& page,
                                       const std::string& name);

/// Copies a sweep's aggregate (aggregate/results.csv) into `<data_dir>/<name>/` with a
/// source.yaml read from its runs' config.yaml (commit, machine, kernel set, threads), their
/// metrics.jsonl and evaluation (seconds) and sweep.json (file, trained range). Returns the
/// claims.yaml entries a row of its `paper:` block would take, for the user to paste.
LENGEN_API std::string collect_sweep(const std::string& sweep_dir,
                                     const std::string& data_dir,
                                     const std::string& name,
                                     const std::string& eval_name = "");

}  // namespace lengen
