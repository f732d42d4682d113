// The exact stack's batched loop (MattsonStack::reference_batch): a chunk of references at a
// time, offline. The distance of a reference is the number of live markers after its id's
// previous timestamp; within a chunk that splits into
//  * a previous reference inside the chunk: the chunk's own live markers after it (a
//    2048-bit bitmap with a byte count per word kept in SSE registers: one popcount and a
//    psadbw of the counts under a mask);
//  * a previous reference before the chunk (old marker p, the id's first reference in the
//    chunk): L(p), the live markers after p when the chunk began, minus those of them whose
//    ids the chunk has already referenced (they moved into the chunk), plus the chunk's live
//    markers so far (every one of them is after p).
// L(p) for all of a chunk's old markers comes from one sweep over the block counts in
// timestamp order (the old markers flagged in a bitmap as they are met), not from a walk of
// the counts per reference; the markers that moved are counted by their rank in that order.
// The loops avoid branches taken at random (old marker or not, d below 256 or not, a flagged
// word's markers): issue 32 measured them, not cache misses, as the cost on small tables.
// Every distance is the one a move-to-front list gives (MattsonBatchTest).
#include <emmintrin.h>

#include <algorithm>

#include "internal.h"

namespace edo::stats::detail {

namespace {

constexpr size_t kChunk = 2048;  // references per chunk: the per-chunk scratch is ~20 KiB of stack
constexpr size_t kChunkWords = kChunk / 64;
constexpr size_t kChunkPrefetch = 16;  // the last timestamp of the id this many references ahead
// Pass 1 tells old markers from references in the chunk without a branch where more than n / 16
// of the last chunk's references switched between the two, on a stack of at most 2^16 ids:
// on a larger one the ids' timestamps miss the cache, and the branch (predicted, so the loads
// of the references after it issue early) measured faster.
constexpr uint32_t kMixedBelow = 16;
constexpr uint64_t kMixedLive = uint64_t{1} << 16;
// The sweep takes a block's flagged old markers word by word where it has more than this many.
constexpr uint32_t kDenseFlags = 64;

template <bool kPop>
__attribute__((always_inline)) inline uint32_t chunk_pc(uint64_t x) {
  return static_cast<uint32_t>(kPop ? static_cast<uint64_t>(__builtin_popcountll(x)) : popcount_swar(x));
}

// The chunk's two sets of positions below kChunk, as one bitmap of 2 x kChunkWords words: the
// chunk's live markers (by position, words [0, 32)) and the old markers that moved (by rank,
// words [32, 64)), answering "how many after i in i's set". A count per word (a byte: at most
// 64) is kept in four SSE registers for the whole loop (byte w & 15 of counts[w >> 4]), so
// a flip is four byte adds of a table row and a query is the byte sum of the counts under a
// mask (psadbw), with no store of a count the next reference must wait for.
constexpr size_t kSetWords = 2 * kChunkWords;
struct SetTables {
  alignas(64) uint8_t above[kSetWords][kSetWords];   // 0xff at the words after w in w's set
  alignas(64) uint8_t one[2][kSetWords][kSetWords];  // [add] at word w: +1 (add) or -1
  constexpr SetTables() : above{}, one{} {
    for (size_t w = 0; w < kSetWords; ++w)
      for (size_t b = 0; b < kSetWords; ++b) {
        above[w][b] = b > w && b / kChunkWords == w / kChunkWords ? 0xff : 0;
        one[1][w][b] = b == w ? 1 : 0;
        one[0][w][b] = b == w ? 0xff : 0;
      }
  }
};
constexpr SetTables kSets{};

struct SetCounts {
  __m128i c[4];
  __attribute__((always_inline)) void add_row(const uint8_t* row) {
    for (int k = 0; k < 4; ++k) c[k] = _mm_add_epi8(c[k], _mm_load_si128(reinterpret_cast<const __m128i*>(row) + k));
  }
  // The counts of the words after w in w's set.
  __attribute__((always_inline)) uint32_t after_word(size_t w) const {
    const __m128i* m = reinterpret_cast<const __m128i*>(kSets.above[w]);
    __m128i s = _mm_add_epi8(_mm_and_si128(c[0], _mm_load_si128(m)), _mm_and_si128(c[1], _mm_load_si128(m + 1)));
    s = _mm_add_epi8(s, _mm_add_epi8(_mm_and_si128(c[2], _mm_load_si128(m + 2)), _mm_and_si128(c[3], _mm_load_si128(m + 3))));
    s = _mm_sad_epu8(s, _mm_setzero_si128());
    s = _mm_add_epi64(s, _mm_unpackhi_epi64(s, s));
    return static_cast<uint32_t>(_mm_cvtsi128_si32(s));
  }
};

// What pass 2 does with a reference (ChunkScratch::code): a first reference ever (kFirstEver), a
// previous reference in the chunk (its position), or an old marker (kOldMarker | its rank):
// the code is the reference's bit in the chunk's sets.
constexpr uint32_t kFirstEver = 0xffffffffu, kOldMarker = kChunk;

struct ChunkScratch {
  uint32_t code[kChunk];
  uint32_t old_after[kChunk];  // first references in the chunk of old ids: L(p)
  uint64_t words[kSetWords];   // the chunk's sets (SetTables)
};

}  // namespace

// Pass 1 of a chunk: each reference's previous timestamp and its new one; an old marker is
// flagged, and its owner slot (free once the id moves) holds the chunk position of the id's
// first reference. An old marker or a previous reference in the chunk: by a branch where the
// last chunk's references rarely switched between the two (a large table's are nearly all old
// markers; a repeated call's come in long runs), else (kBranchFree) told apart with no branch
// (an old marker is flagged and its owner slot takes j; a reference in the chunk flags nothing
// and writes j to its own owner slot, written again just below). The arrays are read through
// local restrict pointers: through members the compiler reloads them after every store.
template <bool kBranchFree>
__attribute__((always_inline)) inline MattsonStack::ChunkPass1 MattsonStack::chunk_pass1(const uint64_t* ids, size_t m,
                                                                                        uint64_t max_distinct,
                                                                                        uint32_t* code, uint32_t* old_after) {
  uint32_t* __restrict last = last_.data();
  uint32_t* __restrict owner = owner_.data();
  uint64_t* __restrict qbits = qbits_.data();
  uint8_t* __restrict qblock = qblock_.data();
  const uint64_t t0 = now_, live = live_;
  uint64_t f = 0;
  size_t o = 0, j = 0;
  for (; j < m; ++j) {
    if (j + kChunkPrefetch < m)
      __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(last) +
                                                       static_cast<uintptr_t>(ids[j + kChunkPrefetch]) * sizeof(uint32_t)),
                         1, 3);
    const uint64_t id = ids[j];
    const uint32_t p = last[id];
    if (p == 0) {
      if (live + f >= max_distinct) break;
      ++f;
      code[j] = kFirstEver;
    } else if constexpr (kBranchFree) {
      const uint32_t q = p - 1;
      const bool is_old = p <= t0;
      qbits[q >> 6] |= uint64_t{is_old} << (q & 63);
      qblock[q >> kBlockShift] |= static_cast<uint8_t>(is_old);
      owner[is_old ? q : t0 + j] = static_cast<uint32_t>(j);
      o += is_old;
      code[j] = q - static_cast<uint32_t>(t0);  // an old marker's code and L(p) are set by the sweep
      old_after[j] = 0;
    } else if (p <= t0) {
      qbits[(p - 1) >> 6] |= uint64_t{1} << ((p - 1) & 63);
      qblock[(p - 1) >> kBlockShift] = 1;
      owner[p - 1] = static_cast<uint32_t>(j);
      ++o;  // its code is set by the sweep
    } else {
      code[j] = static_cast<uint32_t>(p - 1 - t0);
      old_after[j] = 0;
    }
    last[id] = static_cast<uint32_t>(t0 + j + 1);
    owner[t0 + j] = static_cast<uint32_t>(id + 1);
  }
  return {j, f, o};
}

// The chunk's live markers (bit j of `words`: timestamp t0 + j) join the stack, a word at a time:
// chunk word w is timestamps t0 + 64 w + [0, 64), the top of one bitmap word and the bottom of
// the next (each within one block and one super block).
template <bool kPop>
__attribute__((always_inline)) inline void MattsonStack::join_chunk_markers(const uint64_t* words, size_t n, uint64_t t0) {
  const uint64_t tw = t0 >> 6;
  const uint32_t off = static_cast<uint32_t>(t0 & 63);
  for (size_t w = 0; w < (n + 63) / 64; ++w) {
    const uint64_t x = words[w];
    const uint64_t lo = x << off, hi = off ? x >> (64 - off) : 0;
    const uint64_t w0 = tw + w, w1 = w0 + 1;
    bits_[w0] |= lo;
    bits_[w1] |= hi;
    const uint32_t c0 = chunk_pc<kPop>(lo), c1 = chunk_pc<kPop>(hi);
    block_[w0 >> (kBlockShift - 6)] += c0;
    block_[w1 >> (kBlockShift - 6)] += c1;
    super_[w0 >> (kSuperShift - 6)] += c0;
    super_[w1 >> (kSuperShift - 6)] += c1;
  }
}

// One chunk (n <= kChunk, within the capacity): returns how many ids were referenced.
template <bool kPop>
__attribute__((always_inline)) inline size_t MattsonStack::chunk_loop(const uint64_t* ids, size_t n, DistanceTally& out,
                                                                      uint64_t max_distinct) {
  ChunkScratch sc;
  static_assert(kChunk <= kOldMarker && kOldMarker * 2 == kSetWords * 64, "codes are bits of the sets");
  const uint64_t t0 = now_;
  // Pass 1: previous timestamps, the ids' new ones (chunk_pass1).
  const ChunkPass1 p1 = chunk_mixed_ ? chunk_pass1<true>(ids, n, max_distinct, sc.code, sc.old_after)
                                     : chunk_pass1<false>(ids, n, max_distinct, sc.code, sc.old_after);
  n = p1.n;
  const uint64_t fresh = p1.fresh;
  const size_t olds = p1.olds;
  sweep_old_markers<kPop>(olds, sc.old_after, sc.code);
  // Pass 2, in stream order: the distances. A previous reference in the chunk: the chunk's
  // live markers after it; an old marker: L(p), less the markers after it that moved, plus
  // the chunk's live markers. One path for both (they alternate at random on a skewed trace).
  uint64_t* __restrict words = sc.words;
  std::fill(words, words + kSetWords, 0);
  SetCounts counts{{_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128()}};
  uint64_t* __restrict bins = out.bins.data();
  uint64_t cold = 0, hits = 0, maxd = out.max_distance;
  uint32_t in_chunk = 0;  // the chunk's live markers
  uint32_t switches = 0, last_old = 0;  // between old markers and references in the chunk
  for (size_t j = 0; j < n; ++j) {
    const uint32_t c = sc.code[j];
    if (c == kFirstEver) {
      ++cold;
      ++in_chunk;
      words[j >> 6] |= uint64_t{1} << (j & 63);
      counts.add_row(kSets.one[1][j >> 6]);
      continue;
    }
    const uint32_t old = c / kOldMarker;
    switches += old ^ last_old;
    last_old = old;
    const size_t w = c >> 6;
    const uint64_t bit = uint64_t{1} << (c & 63);
    const uint32_t a = chunk_pc<kPop>(words[w] & (0 - (bit << 1))) + counts.after_word(w);
    // read whatever the reference is (pass 1 wrote 0 for a previous reference in the chunk):
    // a load only when old is a branch the compiler keeps, taken at random
    const uint32_t base = sc.old_after[j] + in_chunk;
    const uint64_t d = old ? base - a : a;
    // the old marker's rank joins the moved; the chunk's q is cleared
    words[w] ^= bit;
    counts.add_row(kSets.one[old][w]);
    in_chunk += old;
    words[j >> 6] |= uint64_t{1} << (j & 63);
    counts.add_row(kSets.one[1][j >> 6]);
    ++bins[StackDistanceHistogram::bin_of(d)];
    ++hits;
    maxd = d > maxd ? d : maxd;
  }
  chunk_mixed_ = switches * kMixedBelow > n && live_ <= kMixedLive;
  out.cold += cold;
  out.hits += hits;
  out.max_distance = maxd;
  join_chunk_markers<kPop>(words, n, t0);
  now_ = t0 + n;
  live_ += fresh;
  return n;
}

// The flagged old markers in timestamp order: each one's L(p) (live markers after it) and rank
// (kOldMarker | rank) into old_after / code at its chunk position (from its owner slot); then the markers are
// removed (their ids moved into the chunk) and the flags cleared.
template <bool kPop>
__attribute__((always_inline)) inline void MattsonStack::sweep_old_markers(size_t olds, uint32_t* old_after,
                                                                           uint32_t* code) {
  constexpr uint64_t kWordsInBlock = uint64_t{1} << (kBlockShift - 6);
  uint64_t* __restrict qbits = qbits_.data();
  uint8_t* __restrict qblock = qblock_.data();
  const uint32_t* __restrict owner = owner_.data();
  const uint64_t live = live_;
  uint64_t before = 0;  // live markers before the current block
  uint32_t r = 0;
  const uint64_t blocks = (now_ + (uint64_t{1} << kBlockShift) - 1) >> kBlockShift;
  for (uint64_t b = 0; b < blocks && r < olds; ++b) {
    const uint32_t in_block = block_[b];
    if (!qblock[b]) {
      before += in_block;
      continue;
    }
    qblock[b] = 0;
    // The block's 8 words first (a fixed loop): the live markers before each, the flags, the
    // markers removed; then its flagged markers. A few (the usual case: old markers scattered
    // over the stack): in one loop, the next flagged word taken by masks when one runs out (a
    // loop per word, ended at random, mispredicted about once a word). Many (a run of markers
    // that moved together, as a repeated call's): word by word, the loops' ends predicted.
    const uint64_t wb = b * kWordsInBlock;
    uint64_t q[kWordsInBlock + 1], bw[kWordsInBlock];
    uint64_t at[kWordsInBlock];  // live markers before each word
    uint64_t sum = before;
    uint32_t removed = 0, words_left = 0;
    for (uint64_t k = 0; k < kWordsInBlock; ++k) {
      q[k] = qbits[wb + k];
      bw[k] = bits_[wb + k];
      at[k] = sum;
      sum += chunk_pc<kPop>(bw[k]);
      removed += chunk_pc<kPop>(q[k]);
      words_left |= static_cast<uint32_t>(q[k] != 0) << k;
      bits_[wb + k] = bw[k] & ~q[k];
      qbits[wb + k] = 0;
    }
    q[kWordsInBlock] = 0;
    // old_after / code of the marker at `bit` of word k
    auto take = [&](uint32_t k, uint32_t bit) {
      const uint32_t j = owner[(wb + k) * 64 + bit];
      // live markers after p: all of them, less those before p and p itself
      old_after[j] = static_cast<uint32_t>(live - (at[k] + chunk_pc<kPop>(bw[k] & ((uint64_t{1} << bit) - 1))) - 1);
      code[j] = kOldMarker | r++;
    };
    if (removed > kDenseFlags) {
      for (uint32_t k = 0; k < kWordsInBlock; ++k)
        for (uint64_t x = q[k]; x; x &= x - 1) take(k, static_cast<uint32_t>(__builtin_ctzll(x)));
    } else {
      uint64_t x = 0;
      uint32_t k = 0;
      for (uint32_t i = 0; i < removed; ++i) {
        // all ones where word k has run out: the next flagged word by masks (the compiler
        // makes a branch of a select here)
        const uint64_t next = 0 - static_cast<uint64_t>(x == 0);
        const uint32_t next32 = static_cast<uint32_t>(next);
        const uint32_t nk = static_cast<uint32_t>(__builtin_ctz(words_left | (1u << kWordsInBlock)));
        x = (q[nk] & next) | (x & ~next);
        k = (nk & next32) | (k & ~next32);
        words_left &= ~((1u << nk) & next32);
        take(k, static_cast<uint32_t>(__builtin_ctzll(x)));
        x &= x - 1;
      }
    }
    before += in_block;
    block_[b] -= removed;
    // the super count of each removed marker (a block lies in one super block)
    super_[b >> (kSuperShift - kBlockShift)] -= removed;
  }
}


namespace {
// The largest id of a batch: AVX2 compares 4 at a time (no 64-bit compare below SSE4.2).
__attribute__((target("popcnt,avx2"))) uint64_t largest_fast(const uint64_t* ids, size_t n) {
  uint64_t m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, ids[i]);
  return m;
}
uint64_t largest_base(const uint64_t* ids, size_t n) {
  uint64_t m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, ids[i]);
  return m;
}
}  // namespace

__attribute__((target("popcnt,avx2"))) size_t MattsonStack::chunk_fast(const uint64_t* ids, size_t n, DistanceTally& out,
                                                                        uint64_t max_distinct) {
  return chunk_loop<true>(ids, n, out, max_distinct);
}
size_t MattsonStack::chunk_base(const uint64_t* ids, size_t n, DistanceTally& out, uint64_t max_distinct) {
  return chunk_loop<false>(ids, n, out, max_distinct);
}

size_t MattsonStack::reference_batch(const uint64_t* ids, size_t n, DistanceTally& out, uint64_t max_distinct) {
  if (n) grow_ids(stack_fast_loops() ? largest_fast(ids, n) : largest_base(ids, n));
  size_t done = 0;
  while (done < n) {
    if (now_ == cap_) compact();
    out.reserve_below(cap_);  // distances are below the live ids, so below the capacity
    const size_t take = static_cast<size_t>(std::min<uint64_t>({n - done, cap_ - now_, kChunk}));
    const size_t k = stack_fast_loops() ? chunk_fast(ids + done, take, out, max_distinct)
                                                               : chunk_base(ids + done, take, out, max_distinct);
    done += k;
    if (k < take) break;  // a new id beyond max_distinct
  }
  return done;
}

}  // namespace edo::stats::detail
