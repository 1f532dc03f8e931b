// The self-contained HTML report of a k-means run (`flashkm fit ... --report report.html`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "flashkm/options.hpp"

namespace flashkm::cli {

/// What the report shows: the run's summary, its per-iteration history and the final cluster
/// sizes. Strings are shown as given (escaped; invalid UTF-8 becomes U+FFFD).
struct ReportData {
  std::string input;        ///< input file path as given
  std::string format;       ///< e.g. "npy float32", "fvecs"
  std::size_t rows = 0, cols = 0, k = 0;
  std::string init;         ///< "k-means++", "k-means||", "random", or the init file
  int n_init = 1, best_init = 0, n_iter = 0;
  int threads = 0;          ///< threads used; 0 = all cores
  bool converged = false, streamed = false;
  std::string stop_reason;  ///< to_string(StopReason): "tolerance", "strict", "max_iter", "callback"
  double inertia = 0, seconds = 0;
  double init_seconds = 0;  ///< seeding, all runs
  std::string target;       ///< SIMD target name
  std::vector<flashkm::IterationStats> history;  ///< all n_init runs; init_run tells which
  std::vector<std::uint64_t> cluster_sizes;      ///< points per cluster of the final model
};

/// Most bars the cluster-size chart draws; above this many clusters, clusters sorted by size are
/// grouped into consecutive ranks so the chart stays legible and the page small for any K.
inline constexpr std::size_t kMaxSizeBars = 200;

/// One HTML5 page that needs no network: a summary table, an inertia-per-iteration chart (SVG
/// `#inertia-chart`), a cluster-size chart (SVG `#sizes-chart`), and the per-iteration table.
/// The charts are drawn by inline JavaScript from the JSON in `<script id="report-data">`; when
/// done, the script sets `data-drawn` on each SVG to the lines (inertia) or bars (sizes) it drew,
/// and a script error sets `data-error` on the body.
std::string render_report_html(const ReportData& data);

}  // namespace flashkm::cli
