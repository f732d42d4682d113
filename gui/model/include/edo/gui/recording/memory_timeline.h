// The device memory timeline of one traced process, stacked by table and downsampled for the
// screen: every bucket of time keeps the moment of its highest total (so no peak is lost)
// and the state at its end (so drops show), heaptrack's approach.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "edo/model/profile.h"
#include "edo/model/profile_summary.h"

namespace edo::gui {

inline constexpr char kOtherSeries[] = "other";

struct StackedTimeline {
  int64_t session_id = 0;
  size_t events = 0;                        // allocation and free events behind it
  std::vector<std::string> series;          // the biggest tables by their own peak, then "other"
  std::vector<double> time_s;               // sample times, seconds since the session started
  std::vector<std::vector<double>> bytes;   // [series][sample] live bytes (never below 0)
  double duration_s = 0.0;                  // the session's duration (or the last event's time)
  double peak_time_s = 0.0;
  int64_t peak_bytes = 0;                   // the running sum's maximum: Profile::peak_bytes()
  double total_at(size_t sample) const;
};

// One timeline per session that has memory events, by session id. At most `max_series`
// series (tables beyond that, and allocations of no table, go to "other") and about
// 2 * `buckets` samples.
std::vector<StackedTimeline> build_timelines(const model::Profile& profile, size_t max_series = 8,
                                             size_t buckets = 400);

// Without a device timeline: each table's bytes (weights + optimizer state), the biggest
// `max_series - 1` tables by name and the rest summed as "other".
struct TableBytes {
  std::string name;
  uint64_t bytes = 0;
};
std::vector<TableBytes> table_bytes_stack(const std::vector<model::TableView>& tables, size_t max_series = 8);

}  // namespace edo::gui
