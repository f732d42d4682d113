// TuneResult::table_named: constant time for plans of many tables (issue 31: a plan export
// grew quadratically, one linear search per choice), and never wrong when `tables` changes
// after an index was built (rename, append, erase, reorder), nor shared between copies.
#include <gtest/gtest.h>

#include <string>

#include "edo/model/tune.h"

namespace edo::model {
namespace {

TuneResult with_tables(int n) {
  TuneResult r;
  for (int i = 0; i < n; ++i) {
    TuneTable t;
    t.name = "t" + std::to_string(i);
    t.rows = static_cast<uint64_t>(i);
    r.tables.push_back(t);
  }
  return r;
}

TEST(TableNamed, FindsEveryTableAndNothingElse) {
  const TuneResult r = with_tables(1000);
  for (int i = 0; i < 1000; ++i) {
    const TuneTable* t = r.table_named("t" + std::to_string(i));
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->rows, static_cast<uint64_t>(i));
  }
  EXPECT_EQ(r.table_named("t1000"), nullptr);
  EXPECT_EQ(r.table_named(""), nullptr);
}

TEST(TableNamed, AChangeAfterTheIndexWasBuiltIsNeverMissed) {
  TuneResult r = with_tables(10);
  ASSERT_NE(r.table_named("t3"), nullptr);  // the index exists now
  r.tables[3].name = "renamed";
  EXPECT_EQ(r.table_named("t3"), nullptr);
  ASSERT_NE(r.table_named("renamed"), nullptr);
  EXPECT_EQ(r.table_named("renamed")->rows, 3u);
  TuneTable extra;
  extra.name = "extra";
  extra.rows = 77;
  r.tables.push_back(extra);  // may move every table
  ASSERT_NE(r.table_named("extra"), nullptr);
  EXPECT_EQ(r.table_named("extra")->rows, 77u);
  EXPECT_EQ(r.table_named("t9")->rows, 9u);
  r.tables.erase(r.tables.begin());  // every position shifts
  EXPECT_EQ(r.table_named("t0"), nullptr);
  EXPECT_EQ(r.table_named("t1")->rows, 1u);
  std::swap(r.tables[0], r.tables[5]);
  EXPECT_EQ(r.table_named("t1")->rows, 1u);
  EXPECT_EQ(r.table_named("t6")->rows, 6u);
}

TEST(TableNamed, ACopyHasItsOwnTables) {
  TuneResult a = with_tables(5);
  ASSERT_NE(a.table_named("t2"), nullptr);
  TuneResult b = a;
  EXPECT_EQ(b.table_named("t2"), &b.tables[2]) << "the copy's own table, not the original's";
  b = with_tables(3);
  EXPECT_EQ(b.table_named("t4"), nullptr);
  EXPECT_EQ(a.table_named("t4"), &a.tables[4]);
}

}  // namespace
}  // namespace edo::model
