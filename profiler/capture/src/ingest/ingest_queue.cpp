#include "ingest_queue.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "edo/edo.h"

namespace edo::capture {

namespace {

// Copies `n` 64-bit ids into `out` as int32 while checking that every one lies in [0, 2^31)
// (then the int32 is the same value); false as soon as one does not (the block it lies in has
// been written, nothing after it: the caller copies all the ids again, 64-bit). One pass over
// the ids, not a check and then a copy: the same 6 KiB are read once. The blocks' fixed trip
// count lets GCC's -O2 vectorizer (cost model "very cheap": a loop whose count it knows) turn
// each block into SSE2 shifts, ORs and shuffles; the loop over all n ids it leaves scalar (a
// check and a copy of 768 ids: ~0.4 us, one block-wise pass: ~0.1 us on the CI VM).
bool narrow_copy_if_fits(const int64_t* ids, uint64_t n, int32_t* out) {
  constexpr uint64_t kBlock = 16;
  uint64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    uint64_t high = 0;
    for (uint64_t j = 0; j < kBlock; ++j) {
      high |= uint64_t(ids[i + j]) >> 31;
      out[i + j] = int32_t(ids[i + j]);
    }
    if (high != 0) return false;
  }
  uint64_t high = 0;
  for (; i < n; ++i) {
    high |= uint64_t(ids[i]) >> 31;
    out[i] = int32_t(ids[i]);
  }
  return high == 0;
}

void delete_all(std::vector<Batch*>& batches) {
  for (Batch* b : batches) delete b;
  batches.clear();
}

}  // namespace

IngestQueue::~IngestQueue() {
  for (Batch* b : queue_) delete b;
  for (Batch* b : pool_) delete b;
}

IngestQueue::Push IngestQueue::push_copy(int64_t table, const void* indices, uint64_t count, int type,
                                         size_t elem_bytes) {
  // 64-bit ids are first taken for ids that fit (4 bytes each, the common case); the narrowing
  // copy finds out whether they do (widen() takes the rest).
  const bool narrow = type == EDO_I64 && elem_bytes == 8;
  const size_t bytes = size_t(count) * (narrow ? 4 : elem_bytes);
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
  if (!reserve(b, bytes)) {
    std::lock_guard<std::mutex> lk(mu_);
    queued_bytes_ -= bytes;
    delete b;
    return Push::kNoMemory;
  }
  // The copy happens outside the lock: callers on several threads copy in parallel.
  b->type = type;
  b->bytes = bytes;
  if (!narrow) {
    std::memcpy(b->data.get(), indices, bytes);
  } else if (narrow_copy_if_fits(static_cast<const int64_t*>(indices), count, reinterpret_cast<int32_t*>(b->data.get()))) {
    b->type = EDO_I32;
  } else {
    const Push p = widen(b, indices, count);
    if (p != Push::kOk) return p;
  }
  b->table = table;
  b->count = count;
  return enqueue(b);
}

bool IngestQueue::reserve(Batch* b, size_t bytes) {
  if (b && b->capacity < bytes) {
    b->data.reset(new (std::nothrow) char[bytes]);
    b->capacity = b->data ? bytes : 0;
  }
  return b && b->data;
}

IngestQueue::Push IngestQueue::widen(Batch* b, const void* indices, uint64_t count) {
  // Accounted as 4 bytes an id so far: the bound is checked again for 8, so that a batch is
  // refused (kFull) exactly when its 64-bit copy would not fit, as if it had been sized so first.
  const size_t wide = size_t(count) * 8;
  bool full = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    full = queued_bytes_ - b->bytes + wide > max_bytes_;
    queued_bytes_ = full ? queued_bytes_ - b->bytes : queued_bytes_ - b->bytes + wide;
  }
  if (full || !reserve(b, wide)) {
    std::vector<Batch*> trimmed;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!full) queued_bytes_ -= wide;
      if (b->data) {  // back to the pool, within what it may keep (it may be a fresh buffer)
        pool_locked(b);
        b = nullptr;
        trim_pool_locked(trimmed);
      }
    }
    delete b;
    delete_all(trimmed);
    return full ? Push::kFull : Push::kNoMemory;
  }
  std::memcpy(b->data.get(), indices, wide);
  b->bytes = wide;
  return Push::kOk;
}

IngestQueue::Push IngestQueue::enqueue(Batch* b) {
  bool notify = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(b);
    unseen_bytes_ += b->bytes;
    last_bytes_ = b->bytes;
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
  std::vector<Batch*> work, trimmed, fresh;
  size_t want = 0, size = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    work.swap(queue_);
    take_peak_ = std::max(unseen_bytes_, take_peak_ - take_peak_ / kPeakDecay);
    want = top_up_count_locked(unseen_bytes_);
    size = last_bytes_;
    unseen_bytes_ = 0;
    wake_ = false;
    trim_pool_locked(trimmed);
  }
  delete_all(trimmed);
  // Allocated and touched here, outside the lock: the page faults are this thread's.
  for (size_t i = 0; i < want; ++i) {
    auto* b = new (std::nothrow) Batch();
    if (!reserve(b, size)) {
      delete b;
      break;
    }
    std::memset(b->data.get(), 0, size);
    fresh.push_back(b);
  }
  if (!fresh.empty()) {
    std::lock_guard<std::mutex> lk(mu_);
    for (Batch* b : fresh) pool_locked(b);
    trim_pool_locked(trimmed);
  }
  delete_all(trimmed);
  return work;
}

size_t IngestQueue::top_up_count_locked(uint64_t cycle) const {
  // The batches just taken come back only after they are counted: until then the pool alone
  // serves the caller, for about as many bytes as this cycle's. Once the pool holds two
  // cycles' buffers (a background thread that keeps up) this finds enough and adds nothing.
  if (last_bytes_ == 0 || pool_bytes_ >= cycle) return 0;
  const uint64_t room = max_bytes_ - std::min(max_bytes_, queued_bytes_ + pool_bytes_);
  return size_t(std::min(cycle - pool_bytes_, room) / last_bytes_);
}

void IngestQueue::pool_locked(Batch* b) {
  pool_bytes_ += b->capacity;
  pool_.push_back(b);
}

void IngestQueue::trim_pool_locked(std::vector<Batch*>& out) {
  const uint64_t room = max_bytes_ - std::min(max_bytes_, queued_bytes_);
  const uint64_t keep = std::min(room, std::max(kPoolBytes, take_peak_));
  while (pool_bytes_ > keep && !pool_.empty()) {
    pool_bytes_ -= pool_.back()->capacity;
    out.push_back(pool_.back());
    pool_.pop_back();
  }
}

void IngestQueue::recycle(std::vector<Batch*>& done) {
  uint64_t freed = 0;
  for (Batch* b : done) freed += b->bytes;
  {
    std::lock_guard<std::mutex> lk(mu_);
    queued_bytes_ -= std::min(queued_bytes_, freed);
    for (Batch* b : done) pool_locked(b);
    done.clear();
    trim_pool_locked(done);
  }
  delete_all(done);
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

uint64_t IngestQueue::pooled_bytes() {
  std::lock_guard<std::mutex> lk(mu_);
  return pool_bytes_;
}

void IngestQueue::clear_stop() {
  std::lock_guard<std::mutex> lk(mu_);
  stop_ = false;
}

}  // namespace edo::capture
