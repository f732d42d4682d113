#include "edo/model/profile_summary.h"

#include <gtest/gtest.h>

#include <set>

#include "recordings.h"

namespace edo::model {
namespace {

TEST(TableViews, MergesSameNameAcrossSessionsAndSortsByBytes) {
  Profile p = edo::testing::sample_profile();
  auto views = table_views(p);
  ASSERT_EQ(views.size(), 3u);
  // user (weights + optimizer state + gradients) first, lm_head (its weights are user's) right
  // after it; item last.
  EXPECT_EQ(views[0].name, "model.emb.user");
  EXPECT_EQ(views[1].name, "model.lm_head");
  EXPECT_EQ(views[2].name, "model.emb.item");
  EXPECT_EQ(views[0].sessions, 2);
  EXPECT_EQ(views[0].summary.lookups, 8u);      // 6 + 2
  EXPECT_EQ(views[0].summary.unique_rows, 4u);  // {1,2,3,999}
  EXPECT_EQ(views[0].aggregate.count(3), 4u);
  EXPECT_EQ(views[0].weight_bytes, 64000u);
  EXPECT_EQ(views[0].optimizer_bytes, 128000u);
  EXPECT_EQ(views[0].grad_bytes, 64000u);
  EXPECT_EQ(views[0].total_bytes(), 64000u + 128000u + 64000u);
  EXPECT_EQ(views[1].total_bytes(), 0u);  // tied: its weights are counted with model.emb.user
  EXPECT_EQ(views[0].tied_with, std::vector<std::string>{"model.lm_head"});
  EXPECT_EQ(views[1].tied_with, std::vector<std::string>{"model.emb.user"});
  EXPECT_EQ(views[1].shares_weights_of, "model.emb.user");
  EXPECT_EQ(views[0].shares_weights_of, "");
}

TEST(TableViews, SameNameOtherShapeStaysSeparate) {
  Profile p = edo::testing::sample_profile();
  p.tables[3].rows = 5000;
  p.tables[3].aggregate = stats::TableAggregate(5000, stats::StatsConfig{});
  auto views = table_views(p);
  ASSERT_EQ(views.size(), 4u);
  // Both are named by whose they are: the rank when the process had one, else its pid.
  std::set<std::string> names;
  for (const auto& v : views) names.insert(v.name);
  EXPECT_TRUE(names.count("model.emb.user (rank 0)")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("model.emb.user (pid 101)")) << ::testing::PrintToString(names);
  for (const auto& v : views) {
    if (v.name != "model.emb.item" && v.name != "model.lm_head") {
      EXPECT_EQ(v.table_name, "model.emb.user");
    }
  }
}

TEST(TableViews, ProgressCountsEveryViewAndGivesTheSameViews) {
  Profile p = edo::testing::sample_profile();
  std::vector<size_t> done;
  auto views = table_views(p, [&](size_t d, size_t total) {
    EXPECT_EQ(total, 3u);
    done.push_back(d);
  });
  EXPECT_EQ(done, (std::vector<size_t>{1, 2, 3}));
  auto plain = table_views(p);
  ASSERT_EQ(views.size(), plain.size());
  for (size_t i = 0; i < views.size(); ++i) {
    EXPECT_EQ(views[i].name, plain[i].name);
    EXPECT_EQ(views[i].summary.lookups, plain[i].summary.lookups);
  }
}

TEST(TableViews, TellWhichViewEachTableWentInto) {
  Profile p = edo::testing::sample_profile();
  p.tables[3].rows = 5000;  // session 2's user table: another shape, a view of its own
  p.tables[3].aggregate = stats::TableAggregate(5000, stats::StatsConfig{});
  std::vector<std::string> view_of_table;
  auto views = table_views(p, {}, &view_of_table);
  ASSERT_EQ(view_of_table.size(), p.tables.size());
  for (size_t i = 0; i < p.tables.size(); ++i) {
    bool found = false;
    for (const auto& v : views) found |= v.name == view_of_table[i] && v.table_name == p.tables[i].name;
    EXPECT_TRUE(found) << view_of_table[i];
  }
  EXPECT_NE(view_of_table[0], view_of_table[3]);
  // Same shape: both processes' tables go into one view.
  Profile q = edo::testing::sample_profile();
  table_views(q, {}, &view_of_table);
  EXPECT_EQ(view_of_table[0], view_of_table[3]);
}

TEST(ProfileTotals, TiedWeightsAreCountedOnce) {
  Profile p = edo::testing::sample_profile();
  // user 64000 + item 1600 + user(session 2) 64000 + its optimizer state 128000 and gradients
  // 64000; lm_head is tied.
  const TableMemory m = p.table_memory();
  EXPECT_EQ(m.weight_bytes, 64000u + 1600u + 64000u);
  EXPECT_EQ(m.optimizer_bytes, 128000u);
  EXPECT_EQ(m.grad_bytes, 64000u);
  EXPECT_EQ(p.table_bytes(), m.weight_bytes + m.optimizer_bytes + m.grad_bytes);
}

TEST(ProfileTotals, GradientKindsAreTheOnlyNonOptimizerExtras) {
  EXPECT_TRUE(is_gradient_kind("grad"));
  EXPECT_TRUE(is_gradient_kind("grad.main"));
  EXPECT_FALSE(is_gradient_kind("adam.exp_avg"));
  EXPECT_FALSE(is_gradient_kind("adagrad.sum"));
  EXPECT_FALSE(is_gradient_kind("gradient_checkpoint"));
}

TEST(TableViews, EqualSizesSortInNaturalOrder) {
  Profile p;
  p.sessions.push_back(Session{});
  p.sessions[0].id = 1;
  for (const char* name : {"table_10", "table_2", "table_1", "table_0", "a", "table_02"}) {
    Table t;
    t.session_id = 1;
    t.name = name;
    t.rows = 10;
    t.dim = 4;
    t.weight_bytes = 160;
    t.aggregate = stats::TableAggregate(10, stats::StatsConfig{});
    p.tables.push_back(t);
  }
  std::vector<std::string> names;
  for (const auto& v : table_views(p)) names.push_back(v.name);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "table_0", "table_1", "table_2", "table_02", "table_10"}));
  EXPECT_TRUE(natural_less("x9", "x10"));
  EXPECT_FALSE(natural_less("x10", "x9"));
  EXPECT_TRUE(natural_less("x", "x1"));
  EXPECT_FALSE(natural_less("same", "same"));
}

TEST(FormatBytes, Units) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(uint64_t{3} << 30), "3.00 GiB");
}

}  // namespace
}  // namespace edo::model
