// TableAggregate::release_ordered_sample() (issue 31: tune held every tuned table's ordered
// sample for the whole run): the sample goes, decoded or still encoded, everything else stays;
// a state shared with a copy is left alone (the copy still reads its sample).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"

namespace edo::stats {
namespace {

TableAggregate sampled_table() {
  auto t = testing::zipf_trace(5000, 1.1, 20000, 3);
  TableIngestor ing(5000, StatsConfig{});
  ing.add(t.data(), t.size());
  ing.close_window();
  return ing.take_delta();
}

std::vector<uint64_t> counts_of(const TableAggregate& a) { return a.counts_descending(); }

TEST(ReleaseOrderedSample, FreesTheSampleAndKeepsTheRest) {
  const TableAggregate a = sampled_table();
  ASSERT_NE(a.ordered_sample(), nullptr);
  const std::string blob = a.serialize();
  TableAggregate without;  // what a reader that never keeps the sample loads
  ASSERT_TRUE(TableAggregate::deserialize_lazily(blob, without, false));
  for (bool decode_first : {false, true}) {
    SCOPED_TRACE(decode_first);
    TableAggregate l;
    ASSERT_TRUE(TableAggregate::deserialize_lazily(blob, l));
    if (decode_first) ASSERT_NE(l.ordered_sample(), nullptr);  // decoded by a replay
    const size_t before = l.memory_bytes();
    EXPECT_TRUE(l.release_ordered_sample());
    EXPECT_EQ(l.ordered_sample(), nullptr);
    EXPECT_LT(l.memory_bytes(), before);
    EXPECT_EQ(l.lookups(), a.lookups());
    EXPECT_EQ(l.unique_rows(), a.unique_rows());
    EXPECT_EQ(counts_of(l), counts_of(a));
    EXPECT_EQ(l.serialize(), without.serialize());  // as if loaded without it
    EXPECT_FALSE(l.release_ordered_sample());       // nothing left to free
  }
}

TEST(ReleaseOrderedSample, LeavesAStateSharedWithACopyAlone) {
  TableAggregate a = sampled_table();
  const TableAggregate copy = a;
  EXPECT_FALSE(a.release_ordered_sample());
  EXPECT_NE(copy.ordered_sample(), nullptr);
  EXPECT_NE(a.ordered_sample(), nullptr);
  EXPECT_FALSE(TableAggregate().release_ordered_sample());
}

}  // namespace
}  // namespace edo::stats
