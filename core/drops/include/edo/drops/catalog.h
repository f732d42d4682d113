// Every way edo can lose data, declared once (issue 36 point 4; docs/losses.md): the tracer
// emits these counters by name (wire Dropped frames), the collector stores them
// (`session_drops`), and `edo record`, `edo report`, its JSON and the dashboard read their
// meaning from here. Header-only and standard-library-only, so that libedo_trace.so uses the
// same list.
//
// The tracer's count_drop() takes a drops::Name, whose constructor is consteval: a counter
// name that is not in kCatalog does not compile (tests/unit/drops: a snippet with an unknown
// name is compiled and must fail, beside the same snippet with a known name that must build).
#pragma once

#include <string_view>

namespace edo::drops {

enum class Unit {
  kEvent,     // a number of lost events (batches, records, flushes): summed into dropped_events
  kQuantity,  // the size of what those events held (indices, bytes, lookups), or a count of things moved
  kSession,   // set to 1 on a session that lost an unknown amount (it ended without its final flush)
};

enum class Severity {
  kDataLoss,  // something the recording should hold is missing
  kInfo,      // nothing lost: the work was done another way or later (said so the numbers can be read)
};

struct Counter {
  std::string_view name;     // for a family: the prefix, ending in ':', that every member starts with
  Unit unit;
  Severity severity;
  std::string_view meaning;  // what was lost, and what to change so that it is not
  std::string_view setting;  // the one setting that lifts it (raised), "" when none does
  bool family = false;       // one counter per item: NAME:ITEM (e.g. per kernel)
};

// In report order.
inline constexpr Counter kCatalog[] = {
    {"batches", Unit::kEvent, Severity::kDataLoss,
     "host lookup batches dropped: the tracer's ingest queue was full (raise EDO_MAX_BUFFER_MB), out of memory, or "
     "still queued when a signal ended the process",
     "EDO_MAX_BUFFER_MB"},
    {"indices", Unit::kQuantity, Severity::kDataLoss, "indices in the dropped host lookup batches", "EDO_MAX_BUFFER_MB"},
    {"device_batches", Unit::kEvent, Severity::kDataLoss,
     "device lookup batches dropped: pinned staging full (raise EDO_MAX_BUFFER_MB) or the device copy failed",
     "EDO_MAX_BUFFER_MB"},
    {"device_batches_in_graph_capture", Unit::kEvent, Severity::kDataLoss,
     "device lookup batches issued while a CUDA graph was being captured (not copied, to keep the graph intact)", ""},
    {"device_batches_captured_before_setup", Unit::kEvent, Severity::kDataLoss,
     "device lookup batches inside a CUDA graph capture for a table whose device counters did not exist yet (set-up "
     "is never done inside a capture; one eager batch before the capture avoids it)",
     ""},
    {"device_batches_not_counted_in_capture", Unit::kEvent, Severity::kDataLoss,
     "device lookup batches on the legacy stream while a blocking stream captured, or in a capture already "
     "invalidated: no work was added",
     ""},
    {"device_batches_captured", Unit::kEvent, Severity::kDataLoss, "counting kernels a CUDA graph capture refused", ""},
    {"device_batches_past_their_buffer", Unit::kEvent, Severity::kDataLoss,
     "device lookup batches refused because their indices ran past the end of the caller's device allocation (a "
     "count larger than the buffer passed to edo_table_lookup): not read, not counted",
     ""},
    {"device_batches_untracked", Unit::kEvent, Severity::kDataLoss,
     "device lookup batches counted on the GPU whose sample copy could not be queued (an event record or copy "
     "failed): their counts are in, their order (LRU curve, footprint windows) is not",
     ""},
    {"device_counter_copies", Unit::kEvent, Severity::kInfo,
     "copies of a table's device counters to the host that failed: nothing lost, the next flush copies every block "
     "of that table again",
     ""},
    {"device_counters_no_memory", Unit::kQuantity, Severity::kInfo,
     "tables whose device counters could not be allocated on the GPU: their device indices were copied to the host "
     "and counted there, nothing lost",
     ""},
    {"kernel_launches_args_unread:", Unit::kEvent, Severity::kDataLoss,
     "launches of that kernel whose arguments could not be read (e.g. a cudaLaunchKernel of a kernel taking "
     "structs), so the tables they read may be missing from their kernel attribution",
     "", true},
    {"weight_snapshots", Unit::kEvent, Severity::kDataLoss,
     "weight snapshots not taken (no memory for the sampled rows, the device read failed, or too many snapshots "
     "waited for the collector): the tuner uses synthetic weights for a table that has none",
     ""},
    {"memory_events", Unit::kEvent, Severity::kDataLoss,
     "GPU allocation/free events dropped: more than EDO_MAX_EVENTS between two flushes (raise it, or lower "
     "EDO_FLUSH_MS)",
     "EDO_MAX_EVENTS"},
    {"cupti_callbacks", Unit::kEvent, Severity::kDataLoss, "CUPTI callbacks the tracer could not record (out of memory)",
     ""},
    {"cupti_records", Unit::kEvent, Severity::kDataLoss,
     "CUPTI activity buffers the tracer could not read (out of memory)", ""},
    {"cupti_activity_records", Unit::kEvent, Severity::kDataLoss,
     "kernel/memory activity records CUPTI itself dropped (no activity buffer was free)", ""},
    {"memory_bound_tables", Unit::kEvent, Severity::kDataLoss,
     "tables that got no statistics: not even their smallest (exact counts for a table whose counts are smaller "
     "than a sketch) fitted in what EDO_MAX_MEMORY_MB had left beyond the other registered tables' smallest (raise "
     "it)",
     "EDO_MAX_MEMORY_MB"},
    {"memory_bound_lookups", Unit::kQuantity, Severity::kDataLoss, "lookups of those tables, not counted",
     "EDO_MAX_MEMORY_MB"},
    {"device_memory_bound_tables", Unit::kQuantity, Severity::kInfo,
     "tables whose device counters did not fit EDO_MAX_DEVICE_MB: their device indices were copied to the host and "
     "counted there, nothing lost (raise EDO_MAX_DEVICE_MB to count them on the GPU)",
     ""},
    {"device_memory_bound_contexts", Unit::kQuantity, Severity::kInfo,
     "CUDA contexts where not even the device counting arena fitted EDO_MAX_DEVICE_MB: all device indices there "
     "were copied to the host and counted there, nothing lost",
     ""},
    {"unsent_flushes", Unit::kEvent, Severity::kDataLoss,
     "flushes the tracer could not deliver (the collector was gone, or the EDO_OUTPUT file could not be written: "
     "disk full, file size limit)",
     ""},
    {"unsent_bytes", Unit::kQuantity, Severity::kDataLoss, "bytes of those undelivered flushes", ""},
    {"unsent_lookups", Unit::kQuantity, Severity::kDataLoss, "lookups counted in those undelivered flushes", ""},
    {"collector_lost", Unit::kSession, Severity::kDataLoss,
     "the process lost its collector while it ran (edo record killed or crashed, or ended first, or the job closed "
     "the tracer's descriptor): what it recorded from then on is in this trace (<output>.unsent.<pid>); what edo had "
     "received but not saved yet (up to ~2 s) is missing, and how much cannot be known",
     ""},
    {"connection_lost", Unit::kSession, Severity::kDataLoss,
     "the process's connection to edo record closed while the process ran on (the job closed the tracer's "
     "descriptor): what it recorded from then on is not here but in <output>.unsent.<pid> (edo import it); when that "
     "file could not be written either, the process said on its stderr how many flushes were lost",
     ""},
    {"ended_without_final_flush", Unit::kSession, Severity::kDataLoss,
     "the process ended without its final flush (killed from outside, crashed, or still running when the recording "
     "ended): what it recorded after its last flush (at most EDO_FLUSH_MS of it) is missing, and how much cannot be "
     "known",
     ""},
};

// The entry of `name` (a family's member "PREFIX:ITEM" finds the family); nullptr for a name
// this build does not know (a newer tracer's: still stored and shown, counted as events).
constexpr const Counter* find(std::string_view name) {
  for (const Counter& c : kCatalog) {
    if (c.family ? (name.size() > c.name.size() && name.substr(0, c.name.size()) == c.name) : name == c.name) return &c;
  }
  return nullptr;
}

// A counter name checked against the catalog at compile time: count_drop("no_such", 1) is a
// compile error ("call to consteval function is not a constant expression").
class Name {
 public:
  consteval Name(const char* name) : name_(name) {  // NOLINT(google-explicit-constructor): literals convert
    const Counter* c = find(name);
    if (c == nullptr || c->family) throw "edo: this drop counter is not in core/drops/include/edo/drops/catalog.h";
  }
  constexpr const char* c_str() const { return name_; }
  constexpr std::string_view view() const { return name_; }

 private:
  const char* name_;
};

// A family's prefix checked likewise; its members are PREFIX + ITEM, made at run time.
class Family {
 public:
  consteval Family(const char* prefix) : prefix_(prefix) {  // NOLINT(google-explicit-constructor)
    bool found = false;
    for (const Counter& c : kCatalog) found = found || (c.family && c.name == std::string_view(prefix));
    if (!found) throw "edo: this drop counter family is not in core/drops/include/edo/drops/catalog.h";
  }
  constexpr std::string_view prefix() const { return prefix_; }

 private:
  const char* prefix_;
};

}  // namespace edo::drops
