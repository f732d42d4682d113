#include "launch_tables.h"

#include <algorithm>
#include <utility>

namespace edo::capture {

namespace {
size_t pow2_at_least(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}
}  // namespace

LaunchTables::LaunchTables(size_t capacity, size_t preallocated)
    : capacity_(pow2_at_least(std::max<size_t>(capacity, 2))),
      ring_(std::min(capacity_, pow2_at_least(std::max<size_t>(preallocated, 2)))),
      slots_(4 * ring_.size()) {}

LaunchTables::Slot* LaunchTables::find(uint32_t id) {
  Slot& s = slots_[id & (slots_.size() - 1)];
  return id && s.id == id ? &s : nullptr;
}

void LaunchTables::insert(uint32_t id, uint64_t seq) {
  while (true) {
    Slot& s = slots_[id & (slots_.size() - 1)];
    if (s.id == 0 || s.id == id) {
      s = {id, uint32_t(seq)};
      return;
    }
    // Another waiting launch's id, `size` ids earlier: a bigger index, or (at its bound) that
    // launch is forgotten.
    if (slots_.size() < 4 * capacity_) {
      reindex(slots_.size() * 2);
      continue;
    }
    release(at(s.seq));
    ++forgotten_;
  }
}

void LaunchTables::erase(uint32_t id) {
  if (Slot* s = find(id)) *s = Slot{};
}

void LaunchTables::reindex(size_t slots) {
  slots_.assign(slots, Slot{});
  for (uint64_t seq = tail_; seq < head_; ++seq)
    if (!at(seq).taken)
      for (uint32_t id : at(seq).ids)
        if (id) slots_[id & (slots - 1)] = {id, uint32_t(seq)};
}

void LaunchTables::release(Entry& e) {
  if (!e.taken) --live_;
  for (uint32_t& id : e.ids) {
    if (id) {
      Slot* s = find(id);
      if (s && &at(s->seq) == &e) erase(id);
    }
    id = 0;
  }
  e.taken = true;
  e.index.reset();
}

void LaunchTables::advance_tail() {
  while (tail_ < head_ && at(tail_).taken) ++tail_;
}

void LaunchTables::grow() {
  std::vector<Entry> bigger(ring_.size() * 2);
  const size_t mask = bigger.size() - 1;
  for (uint64_t seq = tail_; seq < head_; ++seq) bigger[seq & mask] = std::move(at(seq));
  ring_ = std::move(bigger);
  // Slots name entries by the low bits of their sequence numbers: rebuilt for the new ring.
  reindex(std::max(slots_.size(), 4 * ring_.size()));
}

void LaunchTables::put(const LaunchInfo& l, const std::shared_ptr<const wire::AddressIndex>& index,
                       const std::string* const* tables, size_t n) {
  std::lock_guard<std::mutex> lk(mu_);
  advance_tail();
  if (head_ - tail_ == ring_.size()) {
    if (ring_.size() < capacity_) {
      grow();
    } else {
      release(at(tail_));  // the oldest launch still waiting: forgotten
      ++forgotten_;
      advance_tail();
    }
  }
  Entry& e = at(head_);
  e.ids[0] = l.correlation;
  e.ids[1] = l.driver_correlation == l.correlation ? 0 : l.driver_correlation;
  e.taken = false;
  ++live_;
  e.n = n;
  e.more.clear();
  for (size_t i = 0; i < n; ++i) {
    if (i < kInlineTables) e.inline_tables[i] = tables[i];
    else e.more.push_back(tables[i]);
  }
  e.index = index;
  for (uint32_t id : e.ids)
    if (id) insert(id, head_);
  ++head_;
}

std::vector<std::string> LaunchTables::take(uint32_t correlation) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!correlation) return {};
  Slot* s = find(correlation);
  if (!s) return {};
  Entry& e = at(s->seq);
  std::vector<std::string> out;
  out.reserve(e.n);
  for (size_t i = 0; i < e.n; ++i) out.push_back(i < kInlineTables ? *e.inline_tables[i] : *e.more[i - kInlineTables]);
  release(e);
  advance_tail();
  return out;
}

uint64_t LaunchTables::forgotten() const {
  std::lock_guard<std::mutex> lk(mu_);
  return forgotten_;
}

size_t LaunchTables::size() const {
  std::lock_guard<std::mutex> lk(mu_);
  return live_;
}

}  // namespace edo::capture
