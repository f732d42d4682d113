// Weight snapshots (`edo record --weights`, EDO_WEIGHTS=1): edo_table_weights() hands over a
// table's weights (host or device memory, at any time); the snapshot keeps the hottest rows by
// count so far plus a uniform sample of the rest (EDO_WEIGHT_ROWS rows at most), copies them
// at once (the pointer is only valid during the call) and queues them as WeightRows frames
// for the next flush. Without EDO_WEIGHTS every call is a no-op returning EDO_OK.
//
// Counts: the tracer's ingestors hand counts out as deltas and keep none, so while snapshots
// are on a HotRowTracker per table (larger than the snapshot bound) follows the deltas the
// tracer ships; the rows not shipped yet are taken from the ingestor at the call.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "edo/dtype.h"
#include "edo/edo.h"
#include "edo/stats/weight_sample.h"
#include "edo/wire/wire.h"
#include "process.h"
#include "cuda_side.h"
#include "events.h"
#include "weights.h"

namespace edo::capture {
namespace {

// Bytes of row values per WeightRows frame, and of snapshot frames waiting for a flush (beyond
// it a snapshot is dropped and counted: a job calling edo_table_weights() in a tight loop must
// not grow the tracer without bound).
constexpr uint64_t kPartBytes = uint64_t{4} << 20;
constexpr uint64_t kMaxQueuedBytes = uint64_t{1} << 30;



// The hottest rows known now: the running tracker merged with what is still pending. Both are
// read under flush_mu after draining the queue: a flush moves counts from pending into the
// tracker (under flush_mu), and a row read from neither side, or from both, would shift the
// ranking (rows of a batch the background thread had taken but not yet counted were missed).
std::vector<std::pair<uint64_t, uint64_t>> ranked_rows(const TableInfo& t, uint64_t want) {
  std::unordered_map<uint64_t, uint64_t> counts;
  Process* p = process();
  Session& s = session();
  std::lock_guard<std::mutex> flk(s.flush_mu);
  if (p->active) {
    s.drain(p->registry);  // waits (drain_mu) for a drain under way to finish counting
    cuda_collect(false);   // device-counted tables: their counts since the last flush
    std::lock_guard<std::mutex> lk(s.counts.mutex());
    const stats::TableAggregate pending = s.counts.pending_locked(t.id);
    for (const auto& [row, c] : pending.top_rows(static_cast<size_t>(want * 2))) counts[row] += c;
  }
  {
    WeightHistory& h = p->weights;
    std::lock_guard<std::mutex> lk(h.mu);
    auto it = h.hot.find(t.id);
    if (it != h.hot.end())
      for (const auto& [row, c] : it->second->top(static_cast<size_t>(want * 2))) counts[row] += c;
  }
  std::vector<std::pair<uint64_t, uint64_t>> ranked(counts.begin(), counts.end());
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return ranked;
}

}  // namespace

void weights_note_delta(const wire::TableDelta& delta) {
  Process* p = process();
  const TableInfo* t = p ? p->registry.get(delta.table) : nullptr;
  if (!t || !p->cfg.weights || t->rows <= p->cfg.weight_rows) return;
  stats::TableAggregate agg;
  if (!stats::TableAggregate::deserialize(delta.aggregate, agg)) return;
  std::lock_guard<std::mutex> lk(p->weights.mu);
  auto& tracker = p->weights.hot[t->id];
  if (!tracker) tracker = std::make_unique<stats::HotRowTracker>(static_cast<uint32_t>(p->cfg.weight_rows));
  tracker->add(agg);
}

std::string weights_take_frames() {
  WeightFrames& w = session().weight_frames;
  std::lock_guard<std::mutex> lk(w.mu);
  std::string out;
  out.swap(w.frames);
  return out;
}

int api_table_weights(int64_t handle, const void* weights, uint64_t row_stride, int device, void* stream) {
  Process* p = process();
  const TableInfo* info = p ? p->registry.get(handle) : nullptr;
  if (!info) return EDO_ERR_BAD_HANDLE;
  const TableInfo& sh = *info;
  if (!weights || (device != EDO_HOST && device != EDO_CUDA)) return EDO_ERR_INVALID_ARGUMENT;
  const uint64_t row_bytes = uint64_t{sh.dim} * dtype_code_bytes(sh.dtype);
  const uint64_t stride = row_stride ? row_stride : row_bytes;
  if (stride < row_bytes) return EDO_ERR_INVALID_ARGUMENT;
  if (!p->active || !p->cfg.weights) return EDO_OK;
  const uint64_t limit = p->cfg.weight_rows;

  uint32_t seq;
  {
    std::lock_guard<std::mutex> lk(p->weights.mu);
    seq = ++p->weights.seq[sh.id];
  }
  const auto ranked = sh.rows > limit ? ranked_rows(sh, limit / 2) : std::vector<std::pair<uint64_t, uint64_t>>{};
  const stats::SnapshotRows pick = stats::choose_snapshot_rows(ranked, sh.rows, limit, (uint64_t{sh.id} << 32) ^ seq);
  std::vector<uint64_t> rows = pick.hot;
  rows.insert(rows.end(), pick.sample.begin(), pick.sample.end());
  if (rows.empty()) return EDO_OK;
  std::string values;
  try {
    values.resize(rows.size() * row_bytes);
  } catch (const std::bad_alloc&) {
    session().events.count_drop("weight_snapshots", 1);
    return EDO_ERR_NO_MEMORY;
  }
  if (device == EDO_HOST) {
    const auto* base = static_cast<const char*>(weights);
    for (size_t i = 0; i < rows.size(); ++i) std::memcpy(&values[i * row_bytes], base + rows[i] * stride, row_bytes);
  } else {
    // The device reader wants ascending rows; put the values back in snapshot order after.
    std::vector<size_t> order(rows.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rows[a] < rows[b]; });
    std::vector<uint64_t> sorted(rows.size());
    for (size_t i = 0; i < order.size(); ++i) sorted[i] = rows[order[i]];
    std::string by_row(values.size(), '\0');
    const int rc = cuda_read_rows(weights, stride, row_bytes, sorted, by_row.data(), stream);
    if (rc != EDO_OK) {
      session().events.count_drop("weight_snapshots", 1);
      return rc;
    }
    for (size_t i = 0; i < order.size(); ++i) std::memcpy(&values[order[i] * row_bytes], &by_row[i * row_bytes], row_bytes);
  }

  // Frames of at most kPartBytes of values; hot rows come first, so every part's hot rows
  // precede its sampled ones and the parts keep that order.
  const uint64_t per_part = std::max<uint64_t>(1, kPartBytes / std::max<uint64_t>(row_bytes, 1));
  const uint64_t parts = (rows.size() + per_part - 1) / per_part;
  std::string out;
  for (uint64_t p = 0; p < parts; ++p) {
    const uint64_t first = p * per_part, last = std::min<uint64_t>(rows.size(), first + per_part);
    wire::WeightRows w;
    w.table = sh.id;
    w.snapshot = seq;
    w.part = static_cast<uint32_t>(p);
    w.parts = static_cast<uint32_t>(parts);
    w.dtype = static_cast<uint8_t>(sh.dtype);
    w.dim = sh.dim;
    w.table_rows = sh.rows;
    w.population = pick.population;
    w.hot_rows = first >= pick.hot.size() ? 0 : std::min<uint64_t>(last, pick.hot.size()) - first;
    w.rows.assign(rows.begin() + static_cast<long>(first), rows.begin() + static_cast<long>(last));
    w.values = values.substr(first * row_bytes, (last - first) * row_bytes);
    wire::encode(w, out);
  }
  WeightFrames& queued = session().weight_frames;
  std::lock_guard<std::mutex> lk(queued.mu);
  if (queued.frames.size() + out.size() > kMaxQueuedBytes) {
    session().events.count_drop("weight_snapshots", 1);
    return EDO_ERR_NO_MEMORY;
  }
  queued.frames += out;
  return EDO_OK;
}

}  // namespace edo::capture
