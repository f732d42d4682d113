// Every way the tracer can lose data, by the name of its counter (wire Dropped frames, the
// `session_drops` table, `edo report` and its JSON "drops"). One list, so that the collector,
// the report and the docs (docs/losses.md) say the same thing about each counter.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace edo::model {

enum class DropUnit {
  kEvent,     // a number of lost events (batches, records, flushes): summed into dropped_events
  kQuantity,  // the size of what those events held (indices, bytes, lookups)
  kSession,   // set to 1 on a session that lost an unknown amount (it ended without its final flush)
};

struct DropCounter {
  const char* name;
  DropUnit unit;
  const char* meaning;  // what was lost, and what to change so that it is not
  const char* setting = nullptr;  // the one setting that lifts it (raised), if there is one
};

// The known counters, in report order.
const std::vector<DropCounter>& drop_counters();
// The entry of `name`; nullptr for a name this build does not know (a newer tracer's): such a
// counter is still stored and shown, and counted as events.
const DropCounter* find_drop_counter(const std::string& name);
// Sum of the event counters (what Session::dropped_events holds).
uint64_t dropped_events_of(const std::map<std::string, uint64_t>& drops);
// One line for a terminal: "batches: 3 (host lookup batches dropped: ...)"; a session counter
// reads "ended_without_final_flush: 2 session(s) (...)". Control characters in an unknown
// name are escaped (\xNN).
std::string describe_drop(const std::string& name, uint64_t n);

// The settings that lift the losses in `drops` (counters above 0), each once, in catalog
// order, joined by " and ": "EDO_MAX_MEMORY_MB"; empty when no such loss has one.
std::string lifting_settings(const std::map<std::string, uint64_t>& drops);

// Counter names used by more than one part.
inline constexpr const char* kEndedWithoutFinalFlush = "ended_without_final_flush";
// Set by the collector instead of kEndedWithoutFinalFlush when the process still ran when its
// connection closed (the job closed the tracer's descriptor): it was neither killed nor crashed,
// and what it recorded from then on went to <output>.unsent.<pid> (issue 30 §6).
inline constexpr const char* kConnectionLost = "connection_lost";

}  // namespace edo::model
