// Stream capture and CUDA graphs of the fake driver: see fake_capture.h for what is modelled
// and the cuda.h lines it follows.
#include "fake_capture.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace fake_capture {
namespace {

struct Sequence {
  uint64_t id = 0;
  CUstream origin = nullptr;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;
  bool invalidated = false;
  std::vector<Work> nodes;
  std::map<CUstream, bool> joined;  // forked streams -> joined back since their last work
};

struct Graph {
  std::vector<Work> nodes;
};

std::mutex mu;
std::map<CUstream, unsigned> stream_flags;                  // mu
std::map<CUstream, std::shared_ptr<Sequence>> capturing;     // mu: stream -> its sequence
std::map<CUevent, std::pair<std::shared_ptr<Sequence>, CUstream>> captured_events;  // mu
std::set<CUevent> outside_events;                            // mu: last recorded outside a capture
uint64_t next_id = 1;                                        // mu
std::atomic<uint64_t> foreign{0};
thread_local CUstreamCaptureMode tl_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

bool legacy(CUstream s) { return s == nullptr || s == CU_STREAM_LEGACY; }

// A blocking stream is capturing (the legacy stream depends on it implicitly).
bool blocking_capture_locked() {
  for (const auto& [s, seq] : capturing) {
    auto f = stream_flags.find(s);
    if (f == stream_flags.end() || !(f->second & CU_STREAM_NON_BLOCKING)) return true;
  }
  return false;
}

void invalidate_blocking_locked() {
  for (auto& [s, seq] : capturing) {
    auto f = stream_flags.find(s);
    if (f == stream_flags.end() || !(f->second & CU_STREAM_NON_BLOCKING)) seq->invalidated = true;
  }
}

}  // namespace

void stream_created(CUstream s, unsigned flags) {
  std::lock_guard<std::mutex> lk(mu);
  stream_flags[s] = flags;
}

void note_call() {
  std::lock_guard<std::mutex> lk(mu);
  for (const auto& [s, seq] : capturing)
    if (seq->thread != std::this_thread::get_id()) {
      foreign.fetch_add(1);
      return;
    }
}

uint64_t foreign_calls() { return foreign.load(); }

CUresult unsafe_call() {
  std::lock_guard<std::mutex> lk(mu);
  if (tl_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  bool prohibited = false;
  for (auto& [s, seq] : capturing) {
    const bool own = seq->thread == std::this_thread::get_id();
    // GLOBAL and THREAD_LOCAL: the thread's own non-relaxed capture; GLOBAL only: another
    // thread's capture begun in GLOBAL mode.
    if ((own && seq->mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
        (!own && tl_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && seq->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
      seq->invalidated = true;
      prohibited = true;
    }
  }
  return prohibited ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

bool capture_work(CUstream s, const Work& work, CUresult* r) {
  std::lock_guard<std::mutex> lk(mu);
  if (legacy(s)) {
    if (!blocking_capture_locked()) return false;
    invalidate_blocking_locked();
    *r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    return true;
  }
  auto it = capturing.find(s);
  if (it == capturing.end()) return false;
  Sequence& seq = *it->second;
  if (seq.invalidated) {
    *r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    return true;
  }
  seq.nodes.push_back(work);
  if (auto j = seq.joined.find(s); j != seq.joined.end()) j->second = false;  // work since the join
  *r = CUDA_SUCCESS;
  return true;
}

CUresult event_record(CUevent e, CUstream s) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lk(mu);
  if (legacy(s) && blocking_capture_locked()) {
    invalidate_blocking_locked();
    return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  }
  auto it = capturing.find(s);
  if (it == capturing.end()) {
    captured_events.erase(e);
    outside_events.insert(e);
    return CUDA_SUCCESS;
  }
  if (it->second->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  outside_events.erase(e);
  captured_events[e] = {it->second, s};
  return CUDA_SUCCESS;
}

CUresult stream_wait_event(CUstream s, CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lk(mu);
  auto ev = captured_events.find(e);
  auto cur = capturing.find(s);
  if (ev == captured_events.end()) {
    // An event from outside: a capturing stream may not depend on it.
    if (cur != capturing.end() && outside_events.count(e)) {
      cur->second->invalidated = true;
      return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    return CUDA_SUCCESS;
  }
  const std::shared_ptr<Sequence> seq = ev->second.first;
  const CUstream recorded_on = ev->second.second;
  if (cur == capturing.end()) {
    if (legacy(s)) {
      seq->invalidated = true;
      return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    capturing[s] = seq;  // a fork: s joins the capture
    seq->joined[s] = false;
    return CUDA_SUCCESS;
  }
  if (cur->second != seq) {
    cur->second->invalidated = seq->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_MERGE;
  }
  if (auto j = seq->joined.find(recorded_on); j != seq->joined.end() && s != recorded_on) j->second = true;
  return CUDA_SUCCESS;
}

CUresult event_query(CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  {
    std::lock_guard<std::mutex> lk(mu);
    if (captured_events.count(e)) return CUDA_ERROR_CAPTURED_EVENT;
  }
  return unsafe_call();
}

CUresult stream_synchronize(CUstream s) {
  {
    std::lock_guard<std::mutex> lk(mu);
    auto it = capturing.find(s);
    if (it != capturing.end()) {
      it->second->invalidated = true;
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (legacy(s) && blocking_capture_locked()) {
      invalidate_blocking_locked();
      return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
  }
  return unsafe_call();
}

void event_destroyed(CUevent e) {
  std::lock_guard<std::mutex> lk(mu);
  captured_events.erase(e);
  outside_events.erase(e);
}

CUresult begin(CUstream s, CUstreamCaptureMode mode) {
  std::lock_guard<std::mutex> lk(mu);
  if (legacy(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy stream cannot capture
  if (capturing.count(s)) return CUDA_ERROR_ILLEGAL_STATE;
  auto seq = std::make_shared<Sequence>();
  seq->id = next_id++;
  seq->origin = s;
  seq->mode = mode;
  seq->thread = std::this_thread::get_id();
  capturing[s] = seq;
  return CUDA_SUCCESS;
}

CUresult end(CUstream s, CUgraph* graph) {
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lk(mu);
  auto it = capturing.find(s);
  if (it == capturing.end() || it->second->origin != s) return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  std::shared_ptr<Sequence> seq = it->second;
  if (seq->mode != CU_STREAM_CAPTURE_MODE_RELAXED && seq->thread != std::this_thread::get_id())
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  for (auto c = capturing.begin(); c != capturing.end();) c = c->second == seq ? capturing.erase(c) : std::next(c);
  for (auto e = captured_events.begin(); e != captured_events.end();)
    e = e->second.first == seq ? captured_events.erase(e) : std::next(e);
  *graph = nullptr;
  if (seq->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  for (const auto& [stream, back] : seq->joined)
    if (!back) return CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
  auto* g = new Graph();
  g->nodes = std::move(seq->nodes);
  *graph = reinterpret_cast<CUgraph>(g);
  return CUDA_SUCCESS;
}

CUresult is_capturing(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lk(mu);
  if (legacy(s)) {
    if (blocking_capture_locked()) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;  // status unspecified
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  auto it = capturing.find(s);
  *status = it == capturing.end()        ? CU_STREAM_CAPTURE_STATUS_NONE
            : it->second->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                      : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (id) *id = it == capturing.end() ? 0 : it->second->id;
  return CUDA_SUCCESS;
}

CUresult exchange_mode(CUstreamCaptureMode* mode) {
  if (!mode) return CUDA_ERROR_INVALID_VALUE;
  const CUstreamCaptureMode old = tl_mode;
  tl_mode = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}

CUresult instantiate(CUgraphExec* exec, CUgraph graph) {
  if (!exec || !graph) return CUDA_ERROR_INVALID_VALUE;
  auto* e = new Graph(*reinterpret_cast<Graph*>(graph));
  *exec = reinterpret_cast<CUgraphExec>(e);
  return CUDA_SUCCESS;
}

CUresult launch(CUgraphExec exec, CUstream s, uint32_t correlation) {
  if (!exec) return CUDA_ERROR_INVALID_VALUE;
  const Graph& g = *reinterpret_cast<Graph*>(exec);
  CUresult r = CUDA_SUCCESS;
  // A graph launched into a capture becomes one node of it (child graph).
  if (capture_work(s, [g](uint32_t corr) { for (const Work& w : g.nodes) w(corr); }, &r)) return r;
  for (const Work& w : g.nodes) w(correlation);
  return CUDA_SUCCESS;
}

CUresult graph_destroy(CUgraph graph) {
  delete reinterpret_cast<Graph*>(graph);
  return CUDA_SUCCESS;
}

CUresult exec_destroy(CUgraphExec exec) {
  delete reinterpret_cast<Graph*>(exec);
  return CUDA_SUCCESS;
}

}  // namespace fake_capture
