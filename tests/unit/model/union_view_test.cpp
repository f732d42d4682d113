// The model-parallel LRU curve of a table read on several ranks (add_union_lru, issue 22):
// which processes' streams go into it, and when it is unavailable.
#include <gtest/gtest.h>

#include <vector>

#include "edo/model/profile_summary.h"
#include "edo/model/union_view.h"

namespace edo::model {
namespace {

// table_views() and the union curves, as edo report and the dashboard make them.
std::vector<TableView> views_of(const Profile& p) {
  std::vector<std::string> view_of_table;
  auto views = table_views(p, {}, &view_of_table);
  add_union_lru(p, views, view_of_table);
  return views;
}

stats::TableAggregate read(const std::vector<int64_t>& stream, uint64_t rows) {
  stats::TableIngestor ing(rows, stats::StatsConfig{});
  ing.add(stream.data(), stream.size());
  return ing.take_delta();
}

// Rank 0 reads the even rows of 0..999 cyclically, rank 1 the odd ones (10 cycles each).
Profile two_ranks() {
  Profile p;
  std::vector<int64_t> even, odd;
  for (int cycle = 0; cycle < 10; ++cycle)
    for (int64_t r = 0; r < 1000; r += 2) {
      even.push_back(r);
      odd.push_back(r + 1);
    }
  for (int64_t rank : {0, 1}) {
    Session s;
    s.id = rank + 1;
    s.pid = 100 + rank;
    s.host = "node" + std::to_string(rank);
    s.rank = rank;
    p.sessions.push_back(s);
    Table t;
    t.id = rank + 1;
    t.session_id = s.id;
    t.name = "emb";
    t.rows = 1000;
    t.dim = 4;
    t.dtype = "fp32";
    t.aggregate = read(rank == 0 ? even : odd, 1000);
    p.tables.push_back(std::move(t));
  }
  return p;
}

TEST(UnionView, ATableReadOnTwoRanksHasBothCurves) {
  const auto views = views_of(two_ranks());
  ASSERT_EQ(views.size(), 1u);
  const TableView& v = views[0];
  EXPECT_NEAR(v.summary.lru_hit_rate_50pct, 0.9, 1e-12) << "each rank's own cache of 500 rows holds its cycle";
  ASSERT_TRUE(v.union_lru.has_value());
  ASSERT_TRUE(v.union_lru->available) << v.union_lru->why_not;
  EXPECT_EQ(v.union_lru->ranks, 2u);
  EXPECT_EQ(v.union_lru->hit_rate_50pct, 0.0) << "one cache of 500 rows for the union of 1000 rows cyclically";
  EXPECT_NEAR(v.union_lru->hit_rate_100pct, 0.9, 1e-12);
}

TEST(UnionView, OnlyAddUnionLruComputesIt) {
  const auto views = table_views(two_ranks());
  ASSERT_EQ(views.size(), 1u);
  EXPECT_FALSE(views[0].union_lru.has_value()) << "table_views() alone leaves it to the readers that show it";
}

TEST(UnionView, ATableReadOnOneRankHasNoUnionCurve) {
  Profile p = two_ranks();
  p.tables[1].aggregate = stats::TableAggregate(1000, stats::StatsConfig{});  // rank 1 never read it
  const auto views = views_of(p);
  ASSERT_EQ(views.size(), 1u);
  EXPECT_FALSE(views[0].union_lru.has_value());
}

TEST(UnionView, AForkedWorkerOrAProcessWithoutRankMakesItUnavailable) {
  Profile p = two_ranks();
  Session w = p.sessions[1];  // a forked worker of rank 1 that reads the table too
  w.id = 3;
  w.pid = 202;
  w.parent_pid = 101;
  p.sessions.push_back(w);
  Table t = p.tables[1];
  t.id = 3;
  t.session_id = 3;
  t.aggregate = read({1, 3, 5}, 1000);
  p.tables.push_back(t);
  auto views = views_of(p);
  ASSERT_EQ(views.size(), 1u);
  ASSERT_TRUE(views[0].union_lru.has_value());
  EXPECT_FALSE(views[0].union_lru->available);
  EXPECT_NE(views[0].union_lru->why_not.find("rank 1's lookups of the table come from 2 processes"), std::string::npos)
      << views[0].union_lru->why_not;
  p.sessions[2].rank.reset();
  views = views_of(p);
  ASSERT_TRUE(views[0].union_lru.has_value());
  EXPECT_FALSE(views[0].union_lru->available);
  EXPECT_NE(views[0].union_lru->why_not.find("process 202 on node1 read the table without a RANK"), std::string::npos)
      << views[0].union_lru->why_not;
}

}  // namespace
}  // namespace edo::model
