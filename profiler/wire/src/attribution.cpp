#include "edo/wire/attribution.h"

#include <algorithm>
#include <map>
#include <set>

namespace edo::wire {

void AddressIndex::Builder::add(uint64_t begin, uint64_t bytes, std::string name) {
  if (bytes == 0 || begin == 0) return;
  const uint64_t end = begin + bytes < begin ? UINT64_MAX : begin + bytes;  // saturate at the top
  entries_.push_back({begin, end, std::move(name)});
}

AddressIndex AddressIndex::Builder::build() && {
  AddressIndex ix;
  // One range per base: the first added wins (stable sort keeps the order of addition).
  std::stable_sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  for (Entry& e : entries_)
    if (ix.entries_.empty() || ix.entries_.back().begin != e.begin) ix.entries_.push_back(std::move(e));
  entries_.clear();
  // Sweep over every range boundary; between two boundaries the set of covering ranges does
  // not change, and the owner is the covering range that begins last (the largest index:
  // entries_ is sorted by begin).
  std::multimap<uint64_t, uint32_t> ends;
  std::vector<uint64_t> points;
  points.reserve(2 * ix.entries_.size());
  for (uint32_t i = 0; i < ix.entries_.size(); ++i) {
    points.push_back(ix.entries_[i].begin);
    points.push_back(ix.entries_[i].end);
    ends.emplace(ix.entries_[i].end, i);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  std::set<uint32_t> active;
  size_t next_begin = 0;
  auto end_it = ends.begin();
  for (uint64_t p : points) {
    for (; end_it != ends.end() && end_it->first <= p; ++end_it) active.erase(end_it->second);
    for (; next_begin < ix.entries_.size() && ix.entries_[next_begin].begin <= p; ++next_begin)
      if (ix.entries_[next_begin].end > p) active.insert(uint32_t(next_begin));
    const uint32_t owner = active.empty() ? kNone : *active.rbegin();
    if (!ix.seg_owner_.empty() && ix.seg_owner_.back() == owner) continue;  // same owner: one segment
    ix.seg_begin_.push_back(p);
    ix.seg_owner_.push_back(owner);
  }
  return ix;
}

const AddressIndex::Entry* AddressIndex::find(uint64_t address) const {
  // Most words a kernel launch passes lie outside every table: answered without a search.
  if (seg_begin_.empty() || address < seg_begin_.front() || address >= seg_begin_.back()) return nullptr;
  auto it = std::upper_bound(seg_begin_.begin(), seg_begin_.end(), address);
  if (it == seg_begin_.begin()) return nullptr;
  const uint32_t owner = seg_owner_[size_t(it - seg_begin_.begin()) - 1];
  return owner == kNone ? nullptr : &entries_[owner];
}

const AddressIndex::Entry* AddressIndex::attribute(uint64_t address, uint64_t bytes) const {
  if (const Entry* e = find(address)) return e;
  const uint64_t end = address + (bytes ? bytes : 1);
  auto it = std::lower_bound(entries_.begin(), entries_.end(), address,
                             [](const Entry& e, uint64_t a) { return e.begin < a; });
  if (it != entries_.end() && it->begin < end) return &*it;
  return nullptr;
}

}  // namespace edo::wire
