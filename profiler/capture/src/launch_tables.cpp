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

size_t LaunchTables::home(uint32_t id) const {
  // Correlation ids are consecutive: a multiplicative hash spreads neighbours apart.
  return size_t(uint32_t(id * 2654435761u)) & (slots_.size() - 1);
}

LaunchTables::Slot* LaunchTables::find(uint32_t id) {
  const size_t mask = slots_.size() - 1;
  for (size_t i = home(id);; i = (i + 1) & mask) {
    if (slots_[i].id == id) return &slots_[i];
    if (slots_[i].id == 0) return nullptr;
  }
}

void LaunchTables::insert(uint32_t id, uint64_t seq) {
  if (Slot* s = find(id)) {  // an id seen again (should not happen): the newest launch has it
    s->seq = seq;
    return;
  }
  const size_t mask = slots_.size() - 1;
  size_t i = home(id);
  while (slots_[i].id != 0) i = (i + 1) & mask;
  slots_[i] = {id, seq};
}

void LaunchTables::erase(uint32_t id) {
  Slot* s = find(id);
  if (!s) return;
  // Linear probing's deletion without tombstones: later entries of the same run move back
  // into the hole when their home does not lie cyclically in (hole, their place].
  const size_t mask = slots_.size() - 1;
  size_t hole = size_t(s - slots_.data());
  for (size_t j = (hole + 1) & mask; slots_[j].id != 0; j = (j + 1) & mask) {
    const size_t h = home(slots_[j].id);
    const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    hole = j;
  }
  slots_[hole] = Slot{};
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
  slots_.assign(4 * ring_.size(), Slot{});
  for (uint64_t seq = tail_; seq < head_; ++seq)
    if (!at(seq).taken)
      for (uint32_t id : at(seq).ids)
        if (id) insert(id, seq);
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
