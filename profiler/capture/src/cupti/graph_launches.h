// Kernels launched into CUDA graphs by stream capture, followed from capture to replays
// (torch.cuda.graph, torch.compile's CUDA graph trees). A captured launch runs nothing: it is
// not a launch and gets no kernel record. It is remembered under the capture's id (from
// cuStreamGetCaptureInfo at the launch), the capture's list moves to the graph at
// cuStreamEndCapture, to each exec instantiated from the graph, and every launch of an exec
// counts each of its kernels once; their kernel records carry the graph launch's correlation
// id, by which (and the kernel's name) their tables are found. No CUDA call here: the
// subscriber feeds it GraphEvents (cupti_translate.h) and capture ids. Bounded: past the
// limits the oldest captures, graphs and pending launches are forgotten (and counted).
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace edo::capture {

class GraphLaunches {
 public:
  struct Kernel {
    std::string name;                 // demangled
    std::vector<std::string> tables;  // tables its arguments point into
  };
  explicit GraphLaunches(size_t limit = 4096) : limit_(limit) {}

  void captured_launch(uint64_t capture_id, Kernel k);
  // cuStreamEndCapture: the kernels of `capture_id` now belong to `graph` (0: the capture
  // failed, they are dropped).
  void end_capture(uint64_t capture_id, uint64_t graph);
  void instantiated(uint64_t graph, uint64_t exec);
  // A launch of `exec`: its kernels (each one launch), kept for their kernel records.
  std::vector<Kernel> launched(uint64_t exec, uint32_t correlation);
  // The tables of a kernel record of a graph launch (empty when unknown); each kernel of the
  // launch is taken once.
  std::vector<std::string> take(uint32_t correlation, const std::string& name);
  uint64_t forgotten() const;

 private:
  template <class Map, class Key>
  void remember(Map& map, std::deque<Key>& order, const Key& key);
  const size_t limit_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::vector<Kernel>> captures_, graphs_, execs_;
  std::deque<uint64_t> capture_order_, graph_order_, exec_order_;
  std::unordered_map<uint32_t, std::vector<Kernel>> pending_;  // graph launch correlation -> kernels
  std::deque<uint32_t> pending_order_;
  uint64_t forgotten_ = 0;
};

}  // namespace edo::capture
