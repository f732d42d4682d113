#include "nvtx_ranges.h"

#include <vector>

#include "process.h"
#include "events.h"
#include "lifecycle.h"
#include "nvtx_ranges.h"
#include "tracer_log.h"

namespace edo::capture {
namespace {

struct OpenRange {
  RangeTotals* r;
  uint64_t serial;  // the session `r` belongs to
  int64_t start;
};

// Leaked per thread (tiny); survives fork() with the forking thread.
thread_local std::vector<OpenRange>* tl_ranges = nullptr;

// A range pushed before fork() and popped in the child counts in the child's session.
RangeTotals* resolve(const OpenRange& o) {
  Session& s = session();
  return o.serial == s.serial ? o.r : s.ranges.named(o.r->name);
}

void close_range(RangeTotals* r, int64_t start) {
  r->count++;
  r->total_ns += uint64_t(now_ns() - start);
  session().ranges.mark_dirty();
}

}  // namespace

RangeTotals* innermost_range() {
  if (!tl_ranges || tl_ranges->empty()) return nullptr;
  return resolve(tl_ranges->back());
}

void range_push(const std::string& name) {
  if (!tracer_active()) return;
  ensure_background_thread();
  Session& s = session();
  RangeTotals* r = s.ranges.named(name);
  if (!tl_ranges) tl_ranges = new std::vector<OpenRange>();
  tl_ranges->push_back({r, s.serial, now_ns()});
}

void range_pop() {
  if (!tracer_active() || !tl_ranges || tl_ranges->empty()) return;
  OpenRange o = tl_ranges->back();
  tl_ranges->pop_back();
  close_range(resolve(o), o.start);
}

uint64_t range_start(const std::string& name) {
  if (!tracer_active()) return 0;
  ensure_background_thread();
  return process()->range_handles.start(name, now_ns());
}

void range_end(uint64_t id) {
  if (!tracer_active()) return;
  std::string name;
  int64_t start = 0;
  if (!process()->range_handles.end(id, name, start)) return;
  close_range(session().ranges.named(name), start);
}

}  // namespace edo::capture
