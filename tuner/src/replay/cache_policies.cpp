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

#include "edo/stats/row_hash.h"

namespace edo::tuner {

namespace {
// FBGEMM's cache_slot() mixes a row with MurmurHash3's 64-bit finaliser (fmix64), the same
// function edo's row hash is (common.cuh:69-80 against edo/stats/row_hash.h).
uint64_t murmur3_finaliser(uint64_t h) { return stats::hash::mix64(h); }
}  // namespace

uint32_t fbgemm_cache_set(uint64_t row, uint32_t sets) {
  // MurmurHash3's 64-bit finaliser, then modulo the sets (common.cuh:69-80).
  return static_cast<uint32_t>(murmur3_finaliser(row) % sets);
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

namespace {

// A stream with its rows renumbered 0..distinct-1 in order of first reference (the simulators
// index arrays by them instead of hashing rows: issue 31's 10,000 tables each replay theirs).
struct DenseStream {
  std::vector<uint32_t> id;     // per reference
  std::vector<uint64_t> batch;  // per reference
  std::vector<uint64_t> row;    // per id: the row
  std::vector<uint64_t> mixed;  // per id: FBGEMM's finaliser of the row, before the modulo
  size_t split = 0;
  size_t distinct() const { return row.size(); }
};

DenseStream dense_of(const ReplayStream& s) {
  DenseStream d;
  d.split = s.split;
  d.batch = s.batch;
  d.id.reserve(s.rows.size());
  std::unordered_map<uint64_t, uint32_t> ids;
  ids.reserve(s.rows.size());
  for (uint64_t r : s.rows) {
    auto [it, fresh] = ids.try_emplace(r, static_cast<uint32_t>(d.row.size()));
    if (fresh) {
      d.row.push_back(r);
      d.mixed.push_back(murmur3_finaliser(r));
    }
    d.id.push_back(it->second);
  }
  return d;
}

ReplayCount dense_lru(const DenseStream& s, uint64_t slots) {
  ReplayCount out;
  constexpr uint32_t kNone = UINT32_MAX;
  const size_t n = s.distinct();
  std::vector<uint32_t> prev(n, kNone), next(n, kNone);
  std::vector<uint8_t> cached(n, 0);
  uint32_t head = kNone, tail = kNone;  // most recent first
  uint64_t held = 0;
  auto unlink = [&](uint32_t x) {
    (prev[x] != kNone ? next[prev[x]] : head) = next[x];
    (next[x] != kNone ? prev[next[x]] : tail) = prev[x];
  };
  auto push_front = [&](uint32_t x) {
    prev[x] = kNone;
    next[x] = head;
    (head != kNone ? prev[head] : tail) = x;
    head = x;
  };
  for (size_t i = 0; i < s.id.size(); ++i) {
    const uint32_t x = s.id[i];
    const bool counted = i >= s.split;
    out.refs += counted;
    if (cached[x]) {
      out.hits += counted;
      unlink(x);
      push_front(x);
      continue;
    }
    if (slots == 0) continue;
    if (held == slots) {
      const uint32_t victim = tail;
      unlink(victim);
      cached[victim] = 0;
      --held;
    }
    push_front(x);
    cached[x] = 1;
    ++held;
  }
  return out;
}

ReplayCount dense_lfu(const DenseStream& s, uint64_t slots) {
  ReplayCount out;
  std::vector<uint64_t> count(s.distinct(), 0);  // every row's lookups so far
  std::vector<uint64_t> last(s.distinct(), 0);   // cached row: its last use
  std::vector<uint8_t> cached(s.distinct(), 0);
  // Cached rows by (count, last use): the first is the one to replace.
  std::set<std::tuple<uint64_t, uint64_t, uint32_t>> order;
  for (size_t i = 0; i < s.id.size(); ++i) {
    const uint32_t x = s.id[i];
    const bool counted = i >= s.split;
    out.refs += counted;
    const uint64_t c = ++count[x];
    if (cached[x]) {
      out.hits += counted;
      order.erase({c - 1, last[x], x});
      last[x] = i;
      order.emplace(c, i, x);
      continue;
    }
    if (slots == 0) continue;
    if (order.size() == slots) {
      const auto victim = *order.begin();
      if (std::get<0>(victim) > c) continue;  // every cached row is read more: not cached
      order.erase(order.begin());
      cached[std::get<2>(victim)] = 0;
    }
    order.emplace(c, i, x);
    cached[x] = 1;
    last[x] = i;
  }
  return out;
}

struct FbgemmWay {
  int64_t tag = -1;     // the row (dense id) held, -1: empty
  uint64_t time = 0;    // LRU: the last batch that read or filled it (FBGEMM's lru_state)
  uint64_t locked = 0;  // prefetch: the batch that holds its lock
};

ReplayCount dense_fbgemm(const DenseStream& s, uint64_t sets, uint32_t ways, FbgemmAlgorithm algorithm, bool prefetch) {
  ReplayCount out;
  const bool lfu = algorithm == FbgemmAlgorithm::kLfu;
  const uint64_t n_sets = std::max<uint64_t>(1, sets);
  const size_t n = s.distinct();
  std::vector<FbgemmWay> way(static_cast<size_t>(n_sets) * ways);
  std::vector<int64_t> slot_of(n, -1);     // cached row -> its way
  std::vector<uint64_t> count(n, 0);       // LFU: lfu_state
  std::vector<uint64_t> found_in(n, 0);    // the batch that found the row cached (before inserting)
  std::vector<uint64_t> first_in(n, 0);    // the batch whose first lookup of the row was seen
  std::vector<std::pair<uint64_t, uint32_t>> batch_rows;  // (row, id), ascending row, distinct
  std::vector<std::tuple<uint64_t, uint64_t, uint32_t>> missed;  // (set, order key, id)
  std::vector<uint32_t> order(ways);
  uint64_t now = 0;  // FBGEMM's timestep, one per batch
  for (size_t b0 = 0; b0 < s.id.size();) {
    size_t b1 = b0;
    while (b1 < s.id.size() && s.batch[b1] == s.batch[b0]) ++b1;
    ++now;
    batch_rows.clear();
    for (size_t i = b0; i < b1; ++i) {
      batch_rows.emplace_back(s.row[s.id[i]], s.id[i]);
      if (lfu) ++count[s.id[i]];
    }
    std::sort(batch_rows.begin(), batch_rows.end());
    batch_rows.erase(std::unique(batch_rows.begin(), batch_rows.end()), batch_rows.end());
    // Find: cached rows are marked with this batch (and locked under prefetch).
    missed.clear();
    for (size_t k = 0; k < batch_rows.size(); ++k) {
      const uint32_t x = batch_rows[k].second;
      if (slot_of[x] >= 0) {
        found_in[x] = now;
        way[static_cast<size_t>(slot_of[x])].time = now;
        way[static_cast<size_t>(slot_of[x])].locked = now;
      } else if (ways > 0) {
        // Within a set: ascending row (LRU), most counted first then ascending row (LFU).
        missed.emplace_back(s.mixed[x] % n_sets, lfu ? UINT64_MAX - count[x] : 0, x);
      }
    }
    std::stable_sort(missed.begin(), missed.end(), [](const auto& a, const auto& b) {
      return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b) : std::get<1>(a) < std::get<1>(b);
    });
    // Insert, set by set.
    for (size_t m0 = 0; m0 < missed.size();) {
      size_t m1 = m0;
      const uint64_t set = std::get<0>(missed[m0]);
      while (m1 < missed.size() && std::get<0>(missed[m1]) == set) ++m1;
      FbgemmWay* w = &way[static_cast<size_t>(set) * ways];
      auto cost = [&](uint32_t k) -> int64_t {
        if (!lfu) return static_cast<int64_t>(w[k].time);
        return w[k].tag < 0 ? -1 : static_cast<int64_t>(count[static_cast<size_t>(w[k].tag)]);
      };
      for (uint32_t k = 0; k < ways; ++k) order[k] = k;
      std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return cost(a) < cost(b); });
      size_t inserted = 0;
      const size_t tries = std::min<size_t>(m1 - m0, ways);
      for (size_t l = 0; l < tries; ++l) {
        const uint32_t k = order[l];
        if (lfu) {
          if (cost(k) > static_cast<int64_t>(count[std::get<2>(missed[m0 + l])])) break;
        } else {
          if (prefetch && w[k].locked + 1 == now && w[k].tag >= 0) continue;  // the previous batch's: locked
          if (w[k].time == now) break;
        }
        const uint32_t x = std::get<2>(missed[m0 + (lfu ? l : inserted)]);
        ++inserted;
        if (w[k].tag >= 0) slot_of[static_cast<size_t>(w[k].tag)] = -1;
        w[k].tag = x;
        w[k].time = now;
        w[k].locked = now;
        slot_of[x] = static_cast<int64_t>(set * ways + k);
      }
      m0 = m1;
    }
    // Serve: a lookup hits when its row is cached now and was before the batch, or is not the
    // row's first lookup in the batch (that one fetched it).
    for (size_t i = b0; i < b1; ++i) {
      const uint32_t x = s.id[i];
      const bool first = first_in[x] != now;
      first_in[x] = now;
      const bool hit = slot_of[x] >= 0 && (found_in[x] == now || !first);
      if (i >= s.split) {
        ++out.refs;
        out.hits += hit;
      }
    }
    b0 = b1;
  }
  return out;
}

ReplayCount dense_optimal(const DenseStream& s, uint64_t slots) {
  ReplayCount out;
  const size_t n = s.distinct();
  // The rows read before the split that the held-out part reads, once each (any of them may be
  // in the cache when the held-out part starts), then the held-out part.
  std::vector<uint8_t> early(n, 0), added(n, 0);
  const size_t split = std::min(s.split, s.id.size());
  for (size_t i = 0; i < split; ++i) early[s.id[i]] = 1;
  std::vector<uint32_t> seq;
  for (size_t i = split; i < s.id.size(); ++i)
    if (early[s.id[i]] && !added[s.id[i]]) {
      added[s.id[i]] = 1;
      seq.push_back(s.id[i]);
    }
  const size_t warm = seq.size();
  seq.insert(seq.end(), s.id.begin() + static_cast<std::ptrdiff_t>(split), s.id.end());
  constexpr uint64_t kNever = UINT64_MAX;
  std::vector<uint64_t> next(seq.size(), kNever), later(n, kNever);
  for (size_t i = seq.size(); i-- > 0;) {
    next[i] = later[seq[i]];
    later[seq[i]] = i;
  }
  std::set<std::pair<uint64_t, uint32_t>> cached;  // (next use, row): the last is the farthest
  std::vector<uint64_t> next_of(n, kNever);        // cached row -> its next use (kNever: not cached)
  for (size_t i = 0; i < seq.size(); ++i) {
    const uint32_t x = seq[i];
    const bool counted = i >= warm;
    out.refs += counted;
    if (next_of[x] != kNever) {
      out.hits += counted;
      cached.erase({next_of[x], x});
      next_of[x] = next[i];
      if (next[i] != kNever) cached.emplace(next[i], x);
      continue;
    }
    if (next[i] == kNever || slots == 0) continue;  // never read again: bypass
    if (cached.size() == slots) {
      auto far = std::prev(cached.end());
      if (far->first < next[i]) continue;  // every cached row is read sooner: bypass
      next_of[far->second] = kNever;
      cached.erase(far);
    }
    cached.emplace(next[i], x);
    next_of[x] = next[i];
  }
  return out;
}

}  // namespace

ReplayCount replay_lru(const ReplayStream& s, uint64_t slots) { return dense_lru(dense_of(s), slots); }
ReplayCount replay_lfu(const ReplayStream& s, uint64_t slots) { return dense_lfu(dense_of(s), slots); }
ReplayCount replay_fbgemm(const ReplayStream& s, uint64_t sets, uint32_t ways, FbgemmAlgorithm algorithm, bool prefetch) {
  return dense_fbgemm(dense_of(s), sets, ways, algorithm, prefetch);
}
ReplayCount replay_optimal(const ReplayStream& s, uint64_t slots) { return dense_optimal(dense_of(s), slots); }

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
  const DenseStream d = dense_of(s_);
  p.lru = dense_lru(d, mini_slots).rate();
  p.lfu = dense_lfu(d, mini_slots).rate();
  p.fbgemm_lru = dense_fbgemm(d, mini_sets, mini_ways, FbgemmAlgorithm::kLru, false).rate();
  p.fbgemm_lfu = dense_fbgemm(d, mini_sets, mini_ways, FbgemmAlgorithm::kLfu, false).rate();
  p.fbgemm_lru_prefetch = dense_fbgemm(d, mini_sets, mini_ways, FbgemmAlgorithm::kLru, true).rate();
  p.optimal = dense_optimal(d, mini_slots).rate();
  p.chosen = p.fbgemm_lfu > p.fbgemm_lru ? "lfu" : "lru";
  return p;
}

}  // namespace edo::tuner
