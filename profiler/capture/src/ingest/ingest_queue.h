// Host index batches on their way from the caller to the background thread: the caller
// copies a batch in (bounded by EDO_MAX_BUFFER_MB), the background thread takes all of them
// and gives the buffers back for reuse. The queue also carries the background thread's wake-up
// reasons (work, stop).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace edo::capture {

struct Batch {
  int64_t table = -1;  // -1: close-window marker
  int type = 0;
  uint64_t count = 0;
  size_t bytes = 0;
  size_t capacity = 0;
  std::unique_ptr<char[]> data;
};

class IngestQueue {
 public:
  // The background thread is woken once this many bytes are queued (or a marker, or stop):
  // smaller pushes wait for its next periodic wake-up (at most 20 ms, lifecycle.cpp), so a
  // caller pushing a few KiB per call never pays for a futex wake-up and a context switch.
  static constexpr uint64_t kWakeBytes = uint64_t{1} << 20;
  // Recycled buffers kept for reuse, by capacity (and at most the bound): a backlog of this
  // size, while the background thread is behind, is served without new memory. Fresh memory
  // costs the caller page faults (about 1 us per 6 KiB batch).
  static constexpr uint64_t kPoolBytes = uint64_t{16} << 20;

  explicit IngestQueue(uint64_t max_bytes)
      : max_bytes_(max_bytes),
        wake_bytes_(std::max<uint64_t>(1, std::min(kWakeBytes, max_bytes / 4))),
        pool_max_(std::min(kPoolBytes, max_bytes)) {}
  ~IngestQueue();
  IngestQueue(const IngestQueue&) = delete;
  IngestQueue& operator=(const IngestQueue&) = delete;

  enum class Push { kOk, kFull, kNoMemory };
  // Copies `count` indices of `elem_bytes` each; wakes the background thread when the queue
  // holds wake_bytes_ (a quarter of the bound, at most kWakeBytes).
  Push push_copy(int64_t table, const void* indices, uint64_t count, int type, size_t elem_bytes);
  // A marker that closes every table's drift window when the background thread reaches it.
  void push_window_marker();

  // Everything queued so far (oldest first); give the batches back with recycle().
  std::vector<Batch*> take();
  void recycle(std::vector<Batch*>& done);
  // Batches taken but not counted go back to the front of the queue, oldest first.
  void put_back(std::vector<Batch*>& rest);

  // Background thread: waits until enough work to be worth a wake-up (see push_copy), a
  // marker, stop, or `until`; true once stop was asked.
  bool wait_until(std::chrono::steady_clock::time_point until);
  void request_stop();
  void clear_stop();  // a failed exec: the session goes on

 private:
  const uint64_t max_bytes_;
  const uint64_t wake_bytes_;
  const uint64_t pool_max_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Batch*> queue_;  // mu_
  std::vector<Batch*> pool_;   // mu_
  uint64_t queued_bytes_ = 0;  // mu_
  uint64_t unseen_bytes_ = 0;  // mu_: pushed since the last take()
  uint64_t pool_bytes_ = 0;    // mu_: capacity held by pool_
  bool wake_ = false;          // mu_: the consumer has reason to run now
  bool stop_ = false;          // mu_
};

}  // namespace edo::capture
