// Host index batches on their way from the caller to the background thread: the caller
// copies a batch in (bounded by EDO_MAX_BUFFER_MB), the background thread takes all of them
// and gives the buffers back for reuse. The queue also carries the background thread's wake-up
// reasons (work, stop).
#pragma once

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
  explicit IngestQueue(uint64_t max_bytes) : max_bytes_(max_bytes) {}
  ~IngestQueue();
  IngestQueue(const IngestQueue&) = delete;
  IngestQueue& operator=(const IngestQueue&) = delete;

  enum class Push { kOk, kFull, kNoMemory };
  // Copies `count` indices of `elem_bytes` each and wakes the background thread.
  Push push_copy(int64_t table, const void* indices, uint64_t count, int type, size_t elem_bytes);
  // A marker that closes every table's drift window when the background thread reaches it.
  void push_window_marker();

  // Everything queued so far (oldest first); give the batches back with recycle().
  std::vector<Batch*> take();
  void recycle(std::vector<Batch*>& done);
  // Batches taken but not counted go back to the front of the queue, oldest first.
  void put_back(std::vector<Batch*>& rest);

  // Background thread: waits until there is work, stop, or `until`; true once stop was asked.
  bool wait_until(std::chrono::steady_clock::time_point until);
  void request_stop();
  void clear_stop();  // a failed exec: the session goes on

 private:
  const uint64_t max_bytes_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Batch*> queue_;  // mu_
  std::vector<Batch*> pool_;   // mu_
  uint64_t queued_bytes_ = 0;  // mu_
  bool stop_ = false;          // mu_
};

}  // namespace edo::capture
