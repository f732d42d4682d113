#include "edo/model/profile_summary.h"

#include <gtest/gtest.h>

#include "../db/test_profiles.h"

namespace edo::model {
namespace {

TEST(TableViews, MergesSameNameAcrossSessionsAndSortsByBytes) {
  Profile p = db::testing::sample_profile();
  auto views = table_views(p);
  ASSERT_EQ(views.size(), 3u);
  // user (64000 B) and lm_head (64000 B) first by bytes, then by name; item last.
  EXPECT_EQ(views[0].name, "model.emb.user");
  EXPECT_EQ(views[1].name, "model.lm_head");
  EXPECT_EQ(views[2].name, "model.emb.item");
  EXPECT_EQ(views[0].sessions, 2);
  EXPECT_EQ(views[0].summary.lookups, 8u);      // 6 + 2
  EXPECT_EQ(views[0].summary.unique_rows, 4u);  // {1,2,3,999}
  EXPECT_EQ(views[0].aggregate.count(3), 4u);
  EXPECT_EQ(views[0].extra_bytes, 128000u);
  EXPECT_EQ(views[0].tied_with, std::vector<std::string>{"model.lm_head"});
  EXPECT_EQ(views[1].tied_with, std::vector<std::string>{"model.emb.user"});
  EXPECT_EQ(views[1].shares_weights_of, "model.emb.user");
  EXPECT_EQ(views[0].shares_weights_of, "");
}

TEST(TableViews, SameNameOtherShapeStaysSeparate) {
  Profile p = db::testing::sample_profile();
  p.tables[3].rows = 5000;
  p.tables[3].aggregate = stats::TableAggregate(5000, stats::StatsConfig{});
  auto views = table_views(p);
  ASSERT_EQ(views.size(), 4u);
  bool found = false;
  for (const auto& v : views) found |= v.name == "model.emb.user (session 2)";
  EXPECT_TRUE(found);
}

TEST(ProfileTotals, TiedWeightsAreCountedOnce) {
  Profile p = db::testing::sample_profile();
  // user 64000 + item 1600 + user(session 2) 64000 + its extra 128000; lm_head is tied.
  EXPECT_EQ(p.table_bytes(), 64000u + 1600u + 64000u + 128000u);
}

TEST(FormatBytes, Units) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(uint64_t{3} << 30), "3.00 GiB");
}

}  // namespace
}  // namespace edo::model
