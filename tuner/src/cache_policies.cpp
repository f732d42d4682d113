#include "cache_policies.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <list>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace edo::tuner {

uint32_t fbgemm_cache_set(uint64_t row, uint32_t sets) {
  // MurmurHash3's 64-bit finaliser, then modulo the sets (common.cuh:69-80).
  uint64_t h = row;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return static_cast<uint32_t>(h % sets);
}

uint64_t fbgemm_cache_sets(uint64_t rows, double load_factor) {
  // Python's int(total_cache_hash_size * cache_load_factor): the double product, truncated.
  const auto wanted = static_cast<uint64_t>(static_cast<double>(rows) * load_factor);
  const uint64_t sets = (wanted + kFbgemmWays - 1) / kFbgemmWays;
  return sets == 0 ? 1 : sets;
}

uint64_t fbgemm_cache_device_bytes(uint64_t rows, uint32_t dim, uint32_t element_bytes, double load_factor, bool lfu,
                                   bool prefetch) {
  const uint64_t slots = fbgemm_cache_sets(rows, load_factor) * kFbgemmWays;
  uint64_t b = slots * uint64_t{dim} * element_bytes;  // lxu_cache_weights
  b += slots * 8;                                       // lxu_cache_state
  b += lfu ? (rows + 1) * 8 : slots * 8;                // lxu_state
  if (prefetch) b += slots * 4;                         // lxu_cache_locking_counter
  b += rows * 4;                                        // cache_index_table_map
  b += 16 + 16 + 8 + 4;  // cache_hash_size_cumsum, cache_miss_counter, uvm_cache_stats, local_uvm_cache_stats
  return b;
}

ReplayCount replay_lru(const ReplayStream& s, uint64_t slots) {
  ReplayCount out;
  std::list<uint64_t> order;  // most recent first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where;
  for (size_t i = 0; i < s.rows.size(); ++i) {
    const uint64_t x = s.rows[i];
    const bool counted = i >= s.split;
    out.refs += counted;
    auto it = where.find(x);
    if (it != where.end()) {
      out.hits += counted;
      order.splice(order.begin(), order, it->second);
      continue;
    }
    if (slots == 0) continue;
    if (where.size() == slots) {
      where.erase(order.back());
      order.pop_back();
    }
    order.push_front(x);
    where.emplace(x, order.begin());
  }
  return out;
}

ReplayCount replay_lfu(const ReplayStream& s, uint64_t slots) {
  ReplayCount out;
  std::unordered_map<uint64_t, uint64_t> count;  // every row's lookups so far
  // Cached rows by (count, last use): the first is the one to replace.
  std::set<std::tuple<uint64_t, uint64_t, uint64_t>> cached;
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> key;  // cached row -> (count, last use)
  for (size_t i = 0; i < s.rows.size(); ++i) {
    const uint64_t x = s.rows[i];
    const bool counted = i >= s.split;
    out.refs += counted;
    const uint64_t c = ++count[x];
    auto it = key.find(x);
    if (it != key.end()) {
      out.hits += counted;
      cached.erase({it->second.first, it->second.second, x});
      it->second = {c, i};
      cached.emplace(c, i, x);
      continue;
    }
    if (slots == 0) continue;
    if (key.size() == slots) {
      const auto victim = *cached.begin();
      if (std::get<0>(victim) > c) continue;  // every cached row is read more: not cached
      cached.erase(cached.begin());
      key.erase(std::get<2>(victim));
    }
    cached.emplace(c, i, x);
    key.emplace(x, std::make_pair(c, uint64_t{i}));
  }
  return out;
}

namespace {

struct FbgemmWay {
  int64_t tag = -1;     // the row held, -1: empty
  uint64_t time = 0;    // LRU: the last batch that read or filled it (FBGEMM's lru_state)
  uint64_t locked = 0;  // prefetch: the batch that holds its lock
};

}  // namespace

ReplayCount replay_fbgemm(const ReplayStream& s, uint64_t sets, uint32_t ways, FbgemmAlgorithm algorithm, bool prefetch) {
  ReplayCount out;
  const bool lfu = algorithm == FbgemmAlgorithm::kLfu;
  const auto n_sets = static_cast<uint32_t>(std::max<uint64_t>(1, sets));
  std::vector<FbgemmWay> way(static_cast<size_t>(n_sets) * ways);
  std::unordered_map<uint64_t, uint32_t> slot_of;  // cached row -> its way
  std::unordered_map<uint64_t, uint64_t> count;    // LFU: lfu_state
  uint64_t now = 0;                                // FBGEMM's timestep, one per batch
  std::map<uint64_t, uint32_t> batch_rows;         // the batch's distinct rows (ascending) and lookups
  std::unordered_set<uint64_t> before;             // rows cached when the batch came
  std::map<uint32_t, std::vector<uint64_t>> missed;  // set -> missed rows, in insert order
  for (size_t b0 = 0; b0 < s.rows.size();) {
    size_t b1 = b0;
    while (b1 < s.rows.size() && s.batch[b1] == s.batch[b0]) ++b1;
    ++now;
    batch_rows.clear();
    for (size_t i = b0; i < b1; ++i) ++batch_rows[s.rows[i]];
    if (lfu)
      for (const auto& [row, n] : batch_rows) count[row] += n;
    // Find: cached rows are marked with this batch (and locked under prefetch).
    before.clear();
    missed.clear();
    for (const auto& [row, n] : batch_rows) {
      auto it = slot_of.find(row);
      if (it != slot_of.end()) {
        before.insert(row);
        way[it->second].time = now;
        way[it->second].locked = now;
      } else if (ways > 0) {
        missed[fbgemm_cache_set(row, n_sets)].push_back(row);
      }
    }
    // Insert, set by set.
    for (auto& [set, rows] : missed) {
      FbgemmWay* w = &way[static_cast<size_t>(set) * ways];
      std::vector<uint32_t> order(ways);
      for (uint32_t k = 0; k < ways; ++k) order[k] = k;
      auto cost = [&](uint32_t k) -> int64_t {
        if (!lfu) return static_cast<int64_t>(w[k].time);
        return w[k].tag < 0 ? -1 : static_cast<int64_t>(count[static_cast<uint64_t>(w[k].tag)]);
      };
      std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return cost(a) < cost(b); });
      if (lfu)  // most counted first (ties: lower row, the sorted unique order)
        std::stable_sort(rows.begin(), rows.end(), [&](uint64_t a, uint64_t b) { return count[a] > count[b]; });
      size_t inserted = 0;
      const size_t tries = std::min<size_t>(rows.size(), ways);
      for (size_t l = 0; l < tries; ++l) {
        const uint32_t k = order[l];
        if (lfu) {
          if (cost(k) > static_cast<int64_t>(count[rows[l]])) break;
        } else {
          if (prefetch && w[k].locked + 1 == now && w[k].tag >= 0) continue;  // the previous batch's: locked
          if (w[k].time == now) break;
        }
        const uint64_t row = lfu ? rows[l] : rows[inserted];
        ++inserted;
        if (w[k].tag >= 0) slot_of.erase(static_cast<uint64_t>(w[k].tag));
        w[k].tag = static_cast<int64_t>(row);
        w[k].time = now;
        w[k].locked = now;
        slot_of[row] = static_cast<uint32_t>(set) * ways + k;
      }
    }
    // Serve: a lookup hits when its row is cached now and was before the batch, or is not the
    // row's first lookup in the batch (that one fetched it).
    std::unordered_set<uint64_t> seen;
    for (size_t i = b0; i < b1; ++i) {
      const uint64_t x = s.rows[i];
      const bool first = seen.insert(x).second;
      const bool hit = slot_of.count(x) && (before.count(x) || !first);
      if (i >= s.split) {
        ++out.refs;
        out.hits += hit;
      }
    }
    b0 = b1;
  }
  return out;
}

ReplayCount replay_optimal(const ReplayStream& s, uint64_t slots) {
  ReplayCount out;
  // The rows read before the split that the held-out part reads, once each (any of them may be
  // in the cache when the held-out part starts), then the held-out part.
  std::vector<uint64_t> seq;
  {
    std::unordered_set<uint64_t> early(s.rows.begin(), s.rows.begin() + static_cast<std::ptrdiff_t>(std::min(s.split, s.rows.size())));
    std::unordered_set<uint64_t> added;
    for (size_t i = s.split; i < s.rows.size(); ++i)
      if (early.count(s.rows[i]) && added.insert(s.rows[i]).second) seq.push_back(s.rows[i]);
  }
  const size_t warm = seq.size();
  for (size_t i = s.split; i < s.rows.size(); ++i) seq.push_back(s.rows[i]);
  constexpr uint64_t kNever = UINT64_MAX;
  std::vector<uint64_t> next(seq.size(), kNever);
  {
    std::unordered_map<uint64_t, uint64_t> later;
    for (size_t i = seq.size(); i-- > 0;) {
      auto it = later.find(seq[i]);
      if (it != later.end()) {
        next[i] = it->second;
        it->second = i;
      } else {
        later.emplace(seq[i], i);
      }
    }
  }
  std::set<std::pair<uint64_t, uint64_t>> cached;  // (next use, row): the last is the farthest
  std::unordered_map<uint64_t, uint64_t> next_of;  // cached row -> its next use
  for (size_t i = 0; i < seq.size(); ++i) {
    const uint64_t x = seq[i];
    const bool counted = i >= warm;
    out.refs += counted;
    auto it = next_of.find(x);
    if (it != next_of.end()) {
      out.hits += counted;
      cached.erase({it->second, x});
      if (next[i] == kNever) {
        next_of.erase(it);
      } else {
        it->second = next[i];
        cached.emplace(next[i], x);
      }
      continue;
    }
    if (next[i] == kNever || slots == 0) continue;  // never read again: bypass
    if (next_of.size() == slots) {
      auto far = std::prev(cached.end());
      if (far->first < next[i]) continue;  // every cached row is read sooner: bypass
      next_of.erase(far->second);
      cached.erase(far);
    }
    cached.emplace(next[i], x);
    next_of.emplace(x, next[i]);
  }
  return out;
}

std::optional<PolicyReplay> PolicyReplay::of(const stats::TableAggregate& counts, double lookups_per_step, std::string& why_not,
                                             double fit_fraction) {
  const stats::OrderedSample* s = counts.ordered_sample();
  if (!s || !s->valid || s->threshold == 0 || s->end - s->begin < 2 || s->refs.empty()) {
    why_not = !s ? "recording has no ordered sample" : !s->valid ? "the ordered sample is not one stream's order" : "the ordered sample is empty";
    return std::nullopt;
  }
  // The cut as CacheReplay makes it (cache_replay.cpp).
  const uint64_t split = s->begin + static_cast<uint64_t>(std::floor(fit_fraction * static_cast<double>(s->end - s->begin)));
  const auto per_batch = static_cast<uint64_t>(std::max(1.0, std::round(lookups_per_step)));
  ReplayStream st;
  st.rows.reserve(s->refs.size());
  st.batch.reserve(s->refs.size());
  st.split = s->refs.size();
  for (size_t i = 0; i < s->refs.size(); ++i) {
    if (s->refs[i].position >= split && st.split == s->refs.size()) st.split = i;
    st.rows.push_back(s->refs[i].row);
    st.batch.push_back(s->refs[i].position / per_batch);
  }
  if (st.split == 0 || st.split == st.rows.size()) {
    why_not = st.split == 0 ? "the ordered sample has no references before the cut" : "the ordered sample has no held-out references";
    return std::nullopt;
  }
  return PolicyReplay(std::move(st), s->rate());
}

PolicyRates PolicyReplay::at(uint64_t cache_rows, uint64_t rows) const {
  PolicyRates p;
  p.cache_rows = cache_rows;
  const double lf = rows ? static_cast<double>(cache_rows) / static_cast<double>(rows) : 0.0;
  const uint64_t sets = fbgemm_cache_sets(rows, lf);
  p.slots = sets * kFbgemmWays;
  // The miniature cache (r < 1): capacity x r; 32-way sets x r, or one smaller set.
  const auto mini_slots = static_cast<uint64_t>(std::llround(static_cast<double>(p.slots) * rate_));
  auto mini_sets = static_cast<uint64_t>(std::llround(static_cast<double>(sets) * rate_));
  uint32_t mini_ways = kFbgemmWays;
  if (mini_sets == 0) {
    mini_sets = 1;
    mini_ways = static_cast<uint32_t>(std::min<uint64_t>(kFbgemmWays, mini_slots));
  }
  p.lru = replay_lru(s_, mini_slots).rate();
  p.lfu = replay_lfu(s_, mini_slots).rate();
  p.fbgemm_lru = replay_fbgemm(s_, mini_sets, mini_ways, FbgemmAlgorithm::kLru, false).rate();
  p.fbgemm_lfu = replay_fbgemm(s_, mini_sets, mini_ways, FbgemmAlgorithm::kLfu, false).rate();
  p.fbgemm_lru_prefetch = replay_fbgemm(s_, mini_sets, mini_ways, FbgemmAlgorithm::kLru, true).rate();
  p.optimal = replay_optimal(s_, mini_slots).rate();
  p.chosen = p.fbgemm_lfu > p.fbgemm_lru ? "lfu" : "lru";
  return p;
}

}  // namespace edo::tuner
