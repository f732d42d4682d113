// The chart data of one table's detail view, derived from its merged aggregate (slow for
// big tables: sorting every row's count), so built off the UI thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "edo/model/profile_summary.h"

namespace edo::gui {

struct XY {
  double x = 0.0;
  double y = 0.0;
};

struct TableDetail {
  std::string name;
  uint64_t rows = 0;
  uint64_t lookups = 0;
  uint64_t unique_rows = 0;
  bool sketched = false;           // counts are estimates (count-min + top-K)
  uint64_t ranked_rows = 0;        // rows on the rank-frequency plot (sketch: the top-K)
  uint64_t row_bytes = 0;          // bytes of one row of weights

  // Rank-frequency, log-binned (20 bins per decade of rank): x = the bin's geometric middle
  // rank, y = mean reads per row in the bin. Ranks 1..20 are their own bins, so the hottest
  // rows are exact. Plus the fitted Zipf curve at the same ranks (empty without a valid fit).
  std::vector<XY> rank_frequency;
  std::vector<XY> zipf_fit;
  double zipf_alpha = 0.0;
  double zipf_fit_error = 0.0;
  bool zipf_valid = false;

  // Coverage: x = share of the table's rows (the top floor(x * rows) rows), y = share of
  // lookups they take; 50 points per decade of rows, exact at every point.
  std::vector<XY> coverage;
  // LRU hit rate vs cache size in rows (the summary's curve: `edo report`'s numbers).
  std::vector<XY> lru;
  // Read on several ranks: the LRU curve of one cache for all their lookups (model parallel,
  // `edo report`'s "lru_union"), at the same cache sizes; empty otherwise or when unavailable.
  std::vector<XY> lru_union;
  // Jaccard overlap of each drift window's hot set with the previous window's.
  std::vector<XY> drift;
  double mean_drift = 0.0;
  // The most-read rows, (row, reads), descending.
  std::vector<std::pair<uint64_t, uint64_t>> top_rows;
};

TableDetail build_table_detail(const model::TableView& table, size_t top_rows = 100);

// The rows in the top `row_share` of the table: floor(share x rows), at least one.
uint64_t rows_in_share(const TableDetail& detail, double row_share);
// Share of lookups taken by those rows, read off the coverage curve: exact at its points
// (which include the top 0.1, 1 and 10 %), log-linear between them.
double coverage_at(const TableDetail& detail, double row_share);

}  // namespace edo::gui
