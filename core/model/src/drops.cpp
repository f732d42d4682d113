#include "edo/model/drops.h"

#include <algorithm>

namespace edo::model {

const std::vector<DropCounter>& drop_counters() {
  static const std::vector<DropCounter> all = {
      {"batches", DropUnit::kEvent,
       "host lookup batches dropped: the tracer's ingest queue was full (raise EDO_MAX_BUFFER_MB), out of memory, "
       "or still queued when a signal ended the process",
       "EDO_MAX_BUFFER_MB"},
      {"indices", DropUnit::kQuantity, "indices in the dropped host lookup batches", "EDO_MAX_BUFFER_MB"},
      {"device_batches", DropUnit::kEvent,
       "device lookup batches dropped: pinned staging full (raise EDO_MAX_BUFFER_MB) or the device copy failed",
       "EDO_MAX_BUFFER_MB"},
      {"device_batches_in_graph_capture", DropUnit::kEvent,
       "device lookup batches issued while a CUDA graph was being captured (not copied, to keep the graph intact)", nullptr},
      {"memory_events", DropUnit::kEvent,
       "GPU allocation/free events dropped: more than EDO_MAX_EVENTS between two flushes (raise it, or lower EDO_FLUSH_MS)",
       "EDO_MAX_EVENTS"},
      {"cupti_callbacks", DropUnit::kEvent, "CUPTI callbacks the tracer could not record (out of memory)", nullptr},
      {"cupti_records", DropUnit::kEvent, "CUPTI activity buffers the tracer could not read (out of memory)", nullptr},
      {"cupti_activity_records", DropUnit::kEvent,
       "kernel/memory activity records CUPTI itself dropped (no activity buffer was free)", nullptr},
      {"memory_bound_tables", DropUnit::kEvent,
       "tables that got no statistics: not even their smallest (exact counts for a table whose counts are smaller than a "
       "sketch) fitted in what EDO_MAX_MEMORY_MB had left beyond the other registered tables' smallest (raise it)",
       "EDO_MAX_MEMORY_MB"},
      {"memory_bound_lookups", DropUnit::kQuantity, "lookups of those tables, not counted", "EDO_MAX_MEMORY_MB"},
      // Not losses: what EDO_MAX_DEVICE_MB moved from the GPU to the host (kQuantity: not summed
      // into dropped_events).
      {"device_memory_bound_tables", DropUnit::kQuantity,
       "tables whose device counters did not fit EDO_MAX_DEVICE_MB: their device indices were copied to the host and "
       "counted there, nothing lost (raise EDO_MAX_DEVICE_MB to count them on the GPU)", nullptr},
      {"device_memory_bound_contexts", DropUnit::kQuantity,
       "CUDA contexts where not even the device counting arena fitted EDO_MAX_DEVICE_MB: all device indices there were "
       "copied to the host and counted there, nothing lost", nullptr},
      {"unsent_flushes", DropUnit::kEvent,
       "flushes the tracer could not deliver (the collector was gone, or the EDO_OUTPUT file could not be written: disk full, file size limit)", nullptr},
      {"unsent_bytes", DropUnit::kQuantity, "bytes of those undelivered flushes", nullptr},
      {"unsent_lookups", DropUnit::kQuantity, "lookups counted in those undelivered flushes", nullptr},
      {"collector_lost", DropUnit::kSession,
       "the process lost its collector while it ran (edo record killed or crashed, or ended first, or the job closed "
       "the tracer's descriptor): what it recorded from then on is in this trace (<output>.unsent.<pid>); what edo had "
       "received but not saved yet (up to ~2 s) is missing, and how much cannot be known", nullptr},
      {kConnectionLost, DropUnit::kSession,
       "the process's connection to edo record closed while the process ran on (the job closed the tracer's "
       "descriptor): what it recorded from then on is not here but in <output>.unsent.<pid> (edo import it); when that "
       "file could not be written either, the process said on its stderr how many flushes were lost", nullptr},
      {kEndedWithoutFinalFlush, DropUnit::kSession,
       "the process ended without its final flush (killed from outside, crashed, or still running when the recording "
       "ended): what it recorded after its last flush (at most EDO_FLUSH_MS of it) is missing, and how much cannot be known", nullptr},
  };
  return all;
}

const DropCounter* find_drop_counter(const std::string& name) {
  for (const auto& c : drop_counters())
    if (name == c.name) return &c;
  return nullptr;
}

std::string describe_drop(const std::string& name, uint64_t n) {
  std::string shown;
  for (unsigned char ch : name) {
    if (ch < 0x20 || ch == 0x7f) {
      static const char* hex = "0123456789abcdef";
      shown += "\\x";
      shown += hex[ch >> 4];
      shown += hex[ch & 15];
    } else {
      shown += char(ch);
    }
  }
  const DropCounter* c = find_drop_counter(name);
  std::string line = shown + ": " + std::to_string(n);
  if (c && c->unit == DropUnit::kSession) line += " session(s)";
  line += c ? std::string(" (") + c->meaning + ")" : std::string(" (a counter this edo does not know)");
  return line;
}

std::string lifting_settings(const std::map<std::string, uint64_t>& drops) {
  std::string out;
  std::vector<std::string> seen;
  for (const auto& c : drop_counters()) {
    const auto it = drops.find(c.name);
    if (!c.setting || it == drops.end() || it->second == 0) continue;
    if (std::find(seen.begin(), seen.end(), c.setting) != seen.end()) continue;
    seen.emplace_back(c.setting);
    out += (out.empty() ? "" : " and ") + std::string(c.setting);
  }
  return out;
}

uint64_t dropped_events_of(const std::map<std::string, uint64_t>& drops) {
  uint64_t total = 0;
  for (const auto& [name, n] : drops) {
    const DropCounter* c = find_drop_counter(name);
    if (!c || c->unit == DropUnit::kEvent) total += n;
  }
  return total;
}

}  // namespace edo::model
