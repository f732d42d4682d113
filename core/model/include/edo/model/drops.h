// Every way the tracer can lose data, by the name of its counter (wire Dropped frames, the
// `session_drops` table, `edo report` and its JSON "drops"). The counters are declared once, in
// core/drops/include/edo/drops/catalog.h (which the tracer's count_drop() checks at compile
// time); these are the readers' functions over that list, so that the collector, the report
// and the dashboard say the same thing about each counter (docs/losses.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "edo/drops/catalog.h"

namespace edo::model {

using DropUnit = drops::Unit;
using DropCounter = drops::Counter;

// The entry of `name` (a family member "PREFIX:ITEM" finds its family); nullptr for a name this
// build does not know (a newer tracer's): such a counter is still stored and shown, and counted
// as events.
const DropCounter* find_drop_counter(const std::string& name);
// Sum of the event counters that lose data (what Session::dropped_events holds).
uint64_t dropped_events_of(const std::map<std::string, uint64_t>& drops);
// One line for a terminal: "batches: 3 (host lookup batches dropped: ...)"; a session counter
// reads "ended_without_final_flush: 2 session(s) (...)". Control characters in an unknown
// name are escaped (\xNN).
std::string describe_drop(const std::string& name, uint64_t n);

// The settings that lift the losses in `drops` (counters above 0), each once, in catalog
// order, joined by " and ": "EDO_MAX_MEMORY_MB"; empty when no such loss has one.
std::string lifting_settings(const std::map<std::string, uint64_t>& drops);

// Counter names used by more than one part (checked against the catalog).
inline constexpr const char* kEndedWithoutFinalFlush = "ended_without_final_flush";
// Set by the collector instead of kEndedWithoutFinalFlush when the process still ran when its
// connection closed (the job closed the tracer's descriptor): it was neither killed nor crashed,
// and what it recorded from then on went to <output>.unsent.<pid> (issue 30 §6).
inline constexpr const char* kConnectionLost = "connection_lost";
static_assert(drops::find(kEndedWithoutFinalFlush) && drops::find(kConnectionLost));

}  // namespace edo::model
