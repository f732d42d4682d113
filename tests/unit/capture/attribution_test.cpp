#include <gtest/gtest.h>

#include "edo/wire/attribution.h"

using edo::wire::AddressIndex;

TEST(Attribution, FindsTheTableContainingAnAddress) {
  AddressIndex idx;
  idx.add(0x2000, 0x100, "b");
  idx.add(0x1000, 0x100, "a");
  idx.add(0x1000, 0x100, "a_tied");  // same memory: stays with the first name
  idx.finalize();
  ASSERT_NE(idx.find(0x1000), nullptr);
  EXPECT_EQ(idx.find(0x1000)->name, "a");
  EXPECT_EQ(idx.find(0x10ff)->name, "a");
  EXPECT_EQ(idx.find(0x1100), nullptr);
  EXPECT_EQ(idx.find(0x2080)->name, "b");
  EXPECT_EQ(idx.find(0x0fff), nullptr);
  EXPECT_EQ(idx.entries().size(), 2u);
}

TEST(Attribution, AllocationsContainingATableBelongToIt) {
  AddressIndex idx;
  idx.add(0x10100, 160, "emb");
  // A caching-allocator segment that contains the table.
  ASSERT_NE(idx.attribute(0x10000, 1 << 20), nullptr);
  EXPECT_EQ(idx.attribute(0x10000, 1 << 20)->name, "emb");
  // An allocation inside the table (a sub-allocation).
  EXPECT_EQ(idx.attribute(0x10120, 16)->name, "emb");
  // Unrelated.
  EXPECT_EQ(idx.attribute(0x90000, 64), nullptr);
  EXPECT_EQ(idx.attribute(0x10000, 0x100), nullptr);  // ends right before the table
}
