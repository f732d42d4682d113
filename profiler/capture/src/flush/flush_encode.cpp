// encode_flush(): a FlushSnapshot -> wire frames. No locks, no globals (unit-tested).
#include <algorithm>

#include "flush.h"

namespace edo::capture {

std::string encode_flush(const FlushSnapshot& s) { return encode_flush(FlushSnapshot(s)); }

std::string encode_flush(FlushSnapshot&& s) {
  // The deltas are most of a flush: the frames get their room at once (no reallocation that
  // holds two copies), and each delta is freed once it is encoded, so that a flush holds its
  // table statistics' serialized size about once (stats::state_bound_bytes counts it once).
  size_t room = 4096 + 64 * (s.tables.size() + s.extras.size() + s.ties.size() + s.notes.size()) +
                48 * s.memory_events.size();
  for (const auto& d : s.deltas) room += d.aggregate.size() + 32;
  std::string out;
  out.reserve(room);
  if (s.hello) wire::encode(*s.hello, out);
  for (const auto& t : s.tables) wire::encode(t, out);
  for (const auto& e : s.extras) wire::encode(e, out);
  for (const auto& t : s.ties) wire::encode(t, out);
  for (auto& d : s.deltas) {
    wire::encode(d, out);
    std::string().swap(d.aggregate);
  }
  if (s.steps) wire::encode(wire::Steps{*s.steps}, out);
  for (const auto& n : s.notes) wire::encode(n, out);
  const auto& ev = s.memory_events;
  for (size_t i = 0; i < ev.size(); i += kMaxEventsPerFrame) {
    wire::MemoryEvents m;
    m.events.assign(ev.begin() + long(i), ev.begin() + long(std::min(ev.size(), i + kMaxEventsPerFrame)));
    wire::encode(m, out);
  }
  if (!s.dropped.empty()) wire::encode(wire::Dropped{s.dropped}, out);
  if (s.kernels) wire::encode(wire::KernelStats{*s.kernels}, out);
  if (s.ranges) wire::encode(wire::RangeStats{*s.ranges}, out);
  out += s.weight_frames;
  if (s.goodbye) wire::encode(*s.goodbye, out);
  return out;
}

}  // namespace edo::capture
