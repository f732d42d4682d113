// encode_flush(): a FlushSnapshot -> wire frames. No locks, no globals (unit-tested).
#include <algorithm>

#include "flush.h"

namespace edo::capture {

std::string encode_flush(const FlushSnapshot& s) {
  std::string out;
  if (s.hello) wire::encode(*s.hello, out);
  for (const auto& t : s.tables) wire::encode(t, out);
  for (const auto& e : s.extras) wire::encode(e, out);
  for (const auto& t : s.ties) wire::encode(t, out);
  for (const auto& d : s.deltas) wire::encode(d, out);
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
