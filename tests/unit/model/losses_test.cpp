// The loss curve's summary (edo/model/training.h): counts, first/last, the first non-finite loss,
// the final loss as the mean of the last 10 % (at least one), and which session holds the curve.
#include "edo/model/training.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace edo::model {
namespace {

TEST(Losses, FinalLossIsTheMeanOfTheLastTenPercent) {
  std::vector<StepLoss> l;
  for (uint64_t i = 0; i < 25; ++i) l.push_back({i, double(i)});  // 25 losses: the last 2 (floor of 2.5)
  const LossSummary s = summarize_losses(l);
  EXPECT_EQ(s.count, 25u);
  EXPECT_EQ(s.final_count, 2u);
  EXPECT_DOUBLE_EQ(s.final_loss, (23.0 + 24.0) / 2);
  EXPECT_EQ(s.first->step, 0u);
  EXPECT_EQ(s.last->step, 24u);
  EXPECT_FALSE(s.first_nonfinite.has_value());
}

TEST(Losses, FewLossesUseTheLastOne) {
  const LossSummary s = summarize_losses({{1, 4.0}, {2, 3.0}, {3, 2.5}});
  EXPECT_EQ(s.final_count, 1u);
  EXPECT_DOUBLE_EQ(s.final_loss, 2.5);
}

TEST(Losses, FirstNonFiniteInRecordedOrder) {
  const double inf = std::numeric_limits<double>::infinity();
  const LossSummary s = summarize_losses({{1, 1.0}, {2, 0.9}, {7, -inf}, {8, std::nan("")}, {9, 0.5}});
  ASSERT_TRUE(s.first_nonfinite.has_value());
  EXPECT_EQ(s.first_nonfinite->step, 7u);
  EXPECT_EQ(s.first_nonfinite->loss, -inf);
  EXPECT_DOUBLE_EQ(s.final_loss, 0.5);  // recovered by the end: the final loss alone does not say it broke
}

TEST(Losses, NoneAtAll) {
  const LossSummary s = summarize_losses({});
  EXPECT_EQ(s.count, 0u);
  EXPECT_FALSE(s.first.has_value());
  EXPECT_TRUE(std::isnan(s.final_loss));
}

TEST(Losses, TheSessionWithTheMostLossesAndTheStepTime) {
  Profile p;
  EXPECT_EQ(loss_session(p), nullptr);
  EXPECT_FALSE(seconds_per_step(p).has_value());
  Session a, b;
  a.id = 1;
  a.losses = {{1, 1.0}};
  a.steps = 10;
  a.duration_ns = 5'000'000'000;
  b.id = 2;
  b.losses = {{1, 1.0}, {2, 0.5}};
  b.steps = 100;
  b.duration_ns = 20'000'000'000;
  p.sessions = {a, b};
  ASSERT_NE(loss_session(p), nullptr);
  EXPECT_EQ(loss_session(p)->id, 2);
  EXPECT_DOUBLE_EQ(*seconds_per_step(p), 0.2);
}

TEST(Losses, OptimizerInAFewWords) {
  OptimizerParams adam{"adam", 0.001, 1e-8, 0.01, 0.9, 0.999, 0, 0, false};
  EXPECT_EQ(describe_optimizer(adam), "adam lr=0.001 betas=0.9,0.999 eps=1e-08 wd=0.01");
  OptimizerParams sgd{"sgd", 0.1, 0, 0, 0, 0, 0.9, 0, true};
  EXPECT_EQ(describe_optimizer(sgd), "sgd lr=0.1 momentum=0.9 maximize");
}

}  // namespace
}  // namespace edo::model
