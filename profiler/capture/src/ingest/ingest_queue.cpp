#include "ingest_queue.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace edo::capture {

IngestQueue::~IngestQueue() {
  for (Batch* b : queue_) delete b;
  for (Batch* b : pool_) delete b;
}

IngestQueue::Push IngestQueue::push_copy(int64_t table, const void* indices, uint64_t count, int type,
                                         size_t elem_bytes) {
  const size_t bytes = size_t(count) * elem_bytes;
  Batch* b = nullptr;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (queued_bytes_ + bytes > max_bytes_) return Push::kFull;
    queued_bytes_ += bytes;
    if (!pool_.empty()) {
      b = pool_.back();
      pool_.pop_back();
      pool_bytes_ -= b->capacity;
    }
  }
  if (!b) b = new (std::nothrow) Batch();
  if (b && b->capacity < bytes) {
    b->data.reset(new (std::nothrow) char[bytes]);
    b->capacity = b->data ? bytes : 0;
  }
  if (!b || !b->data) {
    std::lock_guard<std::mutex> lk(mu_);
    queued_bytes_ -= bytes;
    delete b;
    return Push::kNoMemory;
  }
  // The copy happens outside the lock: callers on several threads copy in parallel.
  std::memcpy(b->data.get(), indices, bytes);
  b->table = table;
  b->type = type;
  b->count = count;
  b->bytes = bytes;
  bool notify = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(b);
    unseen_bytes_ += bytes;
    if (!wake_ && unseen_bytes_ >= wake_bytes_) notify = wake_ = true;
  }
  if (notify) cv_.notify_one();
  return Push::kOk;
}

void IngestQueue::push_window_marker() {
  auto* b = new (std::nothrow) Batch();
  if (b) {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(b);
    wake_ = true;
  }
  cv_.notify_one();
}

std::vector<Batch*> IngestQueue::take() {
  std::vector<Batch*> work;
  std::lock_guard<std::mutex> lk(mu_);
  work.swap(queue_);
  unseen_bytes_ = 0;
  wake_ = false;
  return work;
}

void IngestQueue::recycle(std::vector<Batch*>& done) {
  uint64_t freed = 0;
  for (Batch* b : done) freed += b->bytes;
  std::lock_guard<std::mutex> lk(mu_);
  queued_bytes_ -= std::min(queued_bytes_, freed);
  for (Batch* b : done) {
    if (pool_bytes_ + b->capacity <= pool_max_) {
      pool_bytes_ += b->capacity;
      pool_.push_back(b);
    } else {
      delete b;
    }
  }
  done.clear();
}

void IngestQueue::put_back(std::vector<Batch*>& rest) {
  if (rest.empty()) return;
  std::lock_guard<std::mutex> lk(mu_);
  queue_.insert(queue_.begin(), rest.begin(), rest.end());
  wake_ = true;  // left for later by a give-up (a signal's flush): due at the next wait
  rest.clear();
}

bool IngestQueue::wait_until(std::chrono::steady_clock::time_point until) {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait_until(lk, until, [this] { return wake_ || stop_; });
  return stop_;
}

void IngestQueue::request_stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
}

void IngestQueue::clear_stop() {
  std::lock_guard<std::mutex> lk(mu_);
  stop_ = false;
}

}  // namespace edo::capture
