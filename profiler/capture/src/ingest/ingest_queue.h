// Host index batches on their way from the caller to the background thread: the caller
// copies a batch in (bounded by EDO_MAX_BUFFER_MB), the background thread takes all of them
// and gives the buffers back for reuse. The queue also carries the background thread's wake-up
// reasons (work, stop).
//
// The caller's cost is the copy and, when no recycled buffer is free, the kernel's page faults
// on fresh memory (about 1 us per 6 KiB batch, more than the rest of the call). Two things keep
// it off the caller: 64-bit ids that all lie in [0, 2^31) are queued as 32-bit ids (the same
// values: half the bytes to copy and to fault in), and the pool of recycled buffers grows with
// the backlog the background thread takes at once (a decaying peak), so that a backlog it has
// caught up with once is served again without new memory. When the pool holds less than the
// caller pushed since the last take (the first cycles, a backlog that grows), take() tops it up
// with fresh buffers touched on the background thread: the next cycle's batches find memory
// whose page faults were taken off the caller's thread.
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
  // Recycled buffers kept for reuse, by capacity: at least this much, or the peak of the bytes
  // one take() handed over (decaying by 1/kPeakDecay a take, so an idle job gives a burst's
  // memory back within seconds); buffers and queued bytes together stay within the bound.
  static constexpr uint64_t kPoolBytes = uint64_t{16} << 20;
  static constexpr uint64_t kPeakDecay = 64;

  explicit IngestQueue(uint64_t max_bytes)
      : max_bytes_(max_bytes),
        wake_bytes_(std::max<uint64_t>(1, std::min(kWakeBytes, max_bytes / 4))) {}
  ~IngestQueue();
  IngestQueue(const IngestQueue&) = delete;
  IngestQueue& operator=(const IngestQueue&) = delete;

  enum class Push { kOk, kFull, kNoMemory };
  // Copies `count` indices of `type` (EDO_I32 / EDO_I64) of `elem_bytes` each (EDO_I64 ids in
  // [0, 2^31) as EDO_I32); wakes the background thread when the queue holds wake_bytes_ (a
  // quarter of the bound, at most kWakeBytes).
  Push push_copy(int64_t table, const void* indices, uint64_t count, int type, size_t elem_bytes);
  // A marker that closes every table's drift window when the background thread reaches it.
  void push_window_marker();

  // Everything queued so far (oldest first); give the batches back with recycle(). Tops the
  // pool up first (see above).
  std::vector<Batch*> take();
  void recycle(std::vector<Batch*>& done);
  // Batches taken but not counted go back to the front of the queue, oldest first.
  void put_back(std::vector<Batch*>& rest);

  // Background thread: waits until enough work to be worth a wake-up (see push_copy), a
  // marker, stop, or `until`; true once stop was asked.
  bool wait_until(std::chrono::steady_clock::time_point until);
  void request_stop();
  void clear_stop();  // a failed exec: the session goes on

  uint64_t pooled_bytes();  // capacity of the recycled buffers kept now (tests)

 private:
  const uint64_t max_bytes_;
  const uint64_t wake_bytes_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Batch*> queue_;  // mu_
  std::vector<Batch*> pool_;   // mu_
  uint64_t queued_bytes_ = 0;  // mu_
  uint64_t unseen_bytes_ = 0;  // mu_: pushed since the last take()
  uint64_t pool_bytes_ = 0;    // mu_: capacity held by pool_
  uint64_t take_peak_ = 0;     // mu_: decaying peak of the bytes one take() handed over
  size_t last_bytes_ = 0;      // mu_: the size of the latest batch pushed (top-up buffers')

  // push_copy's steps: `b` given room for `bytes` (false: no memory); a batch of 64-bit ids
  // that did not fit in int32 copied again as they are; the filled batch queued.
  static bool reserve(Batch* b, size_t bytes);
  Push widen(Batch* b, const void* indices, uint64_t count);
  Push enqueue(Batch* b);

  // How many buffers of last_bytes_ the pool lacks for `cycle` bytes (the top-up).
  size_t top_up_count_locked(uint64_t cycle) const;

  // `b` into the pool of recycled buffers (trim_pool_locked then bounds the pool).
  void pool_locked(Batch* b);
  // The pool's buffers beyond what it may keep now, moved to `out` (deleted outside mu_).
  void trim_pool_locked(std::vector<Batch*>& out);
  bool wake_ = false;          // mu_: the consumer has reason to run now
  bool stop_ = false;          // mu_
};

}  // namespace edo::capture
