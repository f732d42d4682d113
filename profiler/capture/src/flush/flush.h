// One flush of a session: everything that changed since the previous flush, taken under the
// session's locks into a FlushSnapshot (take_snapshot), then turned into wire frames
// (encode_flush, a pure function of the snapshot) outside them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "edo/wire/wire.h"

namespace edo::capture {

class Registry;
class Session;

struct FlushSnapshot {
  std::optional<wire::Hello> hello;             // the session's first flush
  std::vector<wire::TableReg> tables;           // registered since the last flush
  std::vector<wire::ExtraBytes> extras;         // changed since the last flush
  std::vector<wire::Tie> ties;
  std::vector<wire::TableDelta> deltas;         // counts since the last flush
  uint64_t lookups = 0;                         // lookups those deltas hold (not sent as such)
  std::optional<uint64_t> steps;                // absolute, when it changed
  std::vector<wire::Note> notes;
  std::vector<wire::MemEvent> memory_events;
  std::vector<std::pair<std::string, uint64_t>> dropped;  // absolute, when any changed
  std::optional<std::vector<wire::Kernel>> kernels;        // absolute, when any changed
  std::optional<std::vector<wire::Range>> ranges;          // absolute, when any changed
  std::string weight_frames;                    // encoded WeightRows frames (weights.cpp)
  std::optional<wire::Goodbye> goodbye;         // the session's last flush

  // Nothing but drop counters: what a flush after the sink was lost for good still says.
  bool only_drop_counters() const {
    return !hello && tables.empty() && extras.empty() && ties.empty() && deltas.empty() && !steps &&
           notes.empty() && memory_events.empty() && !kernels && !ranges && !goodbye;
  }
};

// Most memory events per MemoryEvents frame (a frame stays well under wire::kMaxPayload).
inline constexpr size_t kMaxEventsPerFrame = 1 << 16;

// The frames of one flush, in the order the collector needs: Hello first; tables before the
// frames that refer to them; Goodbye last.
std::string encode_flush(const FlushSnapshot& s);
// The same, freeing each table delta once it is encoded (the tracer's flush).
std::string encode_flush(FlushSnapshot&& s);

// Takes what changed in `session` (and what it has not sent of `registry`) and marks it as
// sent; `window_per_flush` closes each table's drift window first (EDO_WINDOW_STEPS=0). The
// caller holds session.flush_mu and adds the Hello / Goodbye itself.
FlushSnapshot take_snapshot(Session& session, Registry& registry, bool window_per_flush);

}  // namespace edo::capture
