// wire::AddressIndex: which table an address or an allocation belongs to. Checked against a
// brute-force reference on random nested and overlapping ranges, and read from several
// threads while the tracer's registry swaps in new indexes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "edo/edo.h"
#include "edo/wire/attribution.h"
#include "registry.h"

using edo::wire::AddressIndex;

namespace {

AddressIndex build(std::initializer_list<AddressIndex::Entry> ranges) {
  AddressIndex::Builder b;
  for (const auto& r : ranges) b.add(r.begin, r.end - r.begin, r.name);
  return std::move(b).build();
}

// The definition, spelled out: the range containing the address that begins last (ties on a
// base: the first added), by scanning all of them.
const AddressIndex::Entry* reference_find(const std::vector<AddressIndex::Entry>& added, uint64_t a) {
  const AddressIndex::Entry* best = nullptr;
  for (const auto& e : added) {
    if (a < e.begin || a >= e.end) continue;
    if (!best || e.begin > best->begin) best = &e;
  }
  return best;
}

}  // namespace

TEST(Attribution, FindsTheTableContainingAnAddress) {
  const AddressIndex idx = build({{0x2000, 0x2100, "b"}, {0x1000, 0x1100, "a"}, {0x1000, 0x1100, "a_tied"}});
  ASSERT_NE(idx.find(0x1000), nullptr);
  EXPECT_EQ(idx.find(0x1000)->name, "a") << "a tie keeps the memory with the first name";
  EXPECT_EQ(idx.find(0x10ff)->name, "a");
  EXPECT_EQ(idx.find(0x1100), nullptr);
  EXPECT_EQ(idx.find(0x2080)->name, "b");
  EXPECT_EQ(idx.find(0x0fff), nullptr);
  EXPECT_EQ(idx.find(0), nullptr);
  EXPECT_EQ(idx.find(UINT64_MAX), nullptr);
  EXPECT_EQ(idx.entries().size(), 2u);
  EXPECT_TRUE(AddressIndex().empty());
  EXPECT_EQ(AddressIndex().find(0x1000), nullptr);
}

TEST(Attribution, NestedRangesAnswerWithTheInnermostAndResumeTheOuterAfterIt) {
  // A packed weights tensor holding two tables, like FBGEMM's TBE.
  const AddressIndex idx = build({{0x10000, 0x20000, "tbe.weights"}, {0x12000, 0x13000, "tbe.t0"}, {0x15000, 0x16000, "tbe.t1"}});
  EXPECT_EQ(idx.find(0x11fff)->name, "tbe.weights");
  EXPECT_EQ(idx.find(0x12000)->name, "tbe.t0");
  EXPECT_EQ(idx.find(0x13000)->name, "tbe.weights") << "after the inner range the outer one owns the memory again";
  EXPECT_EQ(idx.find(0x15800)->name, "tbe.t1");
  EXPECT_EQ(idx.find(0x1ffff)->name, "tbe.weights");
  EXPECT_EQ(idx.find(0x20000), nullptr);
}

TEST(Attribution, AllocationsContainingATableBelongToIt) {
  const AddressIndex idx = build({{0x10100, 0x10100 + 160, "emb"}});
  // A caching-allocator segment that contains the table.
  ASSERT_NE(idx.attribute(0x10000, 1 << 20), nullptr);
  EXPECT_EQ(idx.attribute(0x10000, 1 << 20)->name, "emb");
  // An allocation inside the table (a sub-allocation).
  EXPECT_EQ(idx.attribute(0x10120, 16)->name, "emb");
  // Unrelated.
  EXPECT_EQ(idx.attribute(0x90000, 64), nullptr);
  EXPECT_EQ(idx.attribute(0x10000, 0x100), nullptr);  // ends right before the table
}

TEST(Attribution, MatchesTheDefinitionOnRandomOverlappingRanges) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 40; ++round) {
    std::vector<AddressIndex::Entry> added;
    AddressIndex::Builder b;
    const int n = 1 + int(rng() % 60);
    for (int i = 0; i < n; ++i) {
      uint64_t begin = 0x1000 + (rng() % 4096) * 16;
      if (!added.empty() && rng() % 5 == 0) begin = added[rng() % added.size()].begin;  // a tie
      const uint64_t bytes = 16 + (rng() % 512) * 16;
      const std::string name = "t" + std::to_string(i);
      b.add(begin, bytes, name);
      bool tie = false;
      for (const auto& e : added) tie |= e.begin == begin;
      if (!tie) added.push_back({begin, begin + bytes, name});
    }
    const AddressIndex idx = std::move(b).build();
    ASSERT_EQ(idx.entries().size(), added.size());
    for (int q = 0; q < 2000; ++q) {
      const uint64_t a = 0x800 + rng() % (0x1000 + 4096 * 16 + 512 * 16);
      const auto* want = reference_find(added, a);
      const auto* got = idx.find(a);
      ASSERT_EQ(got == nullptr, want == nullptr) << "round " << round << " address " << a;
      if (want) {
        ASSERT_EQ(got->name, want->name) << "round " << round << " address " << a;
      }
    }
  }
}

TEST(Attribution, ReadersShareAnIndexWhileTheRegistrySwapsInNewOnes) {
  // The tracer's pattern: launch callbacks on many threads read the current index (a
  // shared_ptr<const AddressIndex>) while registrations replace it. Each index a reader holds
  // stays whole and correct (run under ThreadSanitizer to check the absence of races).
  edo::capture::Registry reg(true);
  static float weights[64][1024];
  std::atomic<bool> done{false};
  std::atomic<uint64_t> wrong{0}, lookups{0};
  std::atomic<int> saw_all{0};  // readers that have read the final index (all 64 tables)
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r)
    readers.emplace_back([&] {
      bool seen = false;
      while (!done.load()) {
        auto idx = reg.address_index();
        if (!seen && idx->entries().size() == 64) {
          seen = true;
          saw_all.fetch_add(1);
        }
        for (const auto& e : idx->entries()) {
          const auto* hit = idx->find(e.begin + (e.end - e.begin) / 2);
          if (!hit || hit->name != e.name) wrong.fetch_add(1);
          lookups.fetch_add(1);
        }
      }
    });
  for (int t = 0; t < 64; ++t) {
    ASSERT_EQ(reg.add(("t" + std::to_string(t)).c_str(), weights[t], 1024, 1, EDO_F32, EDO_CUDA), t);
    std::this_thread::yield();
  }
  // Let every reader read the final index too: wait for that, however long a loaded machine
  // takes to schedule them (the deadline only stops a broken build from hanging).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (saw_all.load() < 4 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  done.store(true);
  for (auto& th : readers) th.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(reg.address_index()->entries().size(), 64u);
  EXPECT_GT(lookups.load(), 0u);
  EXPECT_EQ(saw_all.load(), 4);
}
