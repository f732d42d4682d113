// GraphLaunches: kernels captured into a CUDA graph counted at each launch of the graph and
// tied to their tables through the graph launch's correlation id.
#include <gtest/gtest.h>

#include "graph_launches.h"

using edo::capture::GraphLaunches;

TEST(GraphLaunches, CapturedKernelsCountAtEveryLaunchOfEachExec) {
  GraphLaunches g;
  g.captured_launch(7, {"gather_rows(...)", {"emb.a"}});
  g.captured_launch(7, {"scatter(...)", {}});
  g.captured_launch(8, {"other(...)", {"emb.b"}});  // another capture, never ended
  g.end_capture(7, 0x100);
  g.instantiated(0x100, 0x200);
  g.instantiated(0x100, 0x201);  // two execs of one graph
  for (uint32_t corr : {50u, 51u}) {
    auto k = g.launched(0x200, corr);
    ASSERT_EQ(k.size(), 2u);
    EXPECT_EQ(k[0].name, "gather_rows(...)");
    EXPECT_EQ(k[0].tables, std::vector<std::string>{"emb.a"});
  }
  EXPECT_EQ(g.launched(0x201, 52).size(), 2u);
  EXPECT_TRUE(g.launched(0x999, 53).empty()) << "an exec edo never saw instantiated";
  // Kernel records of launch 51 find their tables; each kernel once.
  EXPECT_EQ(g.take(51, "gather_rows(...)"), std::vector<std::string>{"emb.a"});
  EXPECT_TRUE(g.take(51, "gather_rows(...)").empty());
  EXPECT_TRUE(g.take(51, "scatter(...)").empty());
  EXPECT_EQ(g.take(50, "gather_rows(...)"), std::vector<std::string>{"emb.a"});
  EXPECT_TRUE(g.take(99, "gather_rows(...)").empty());
}

TEST(GraphLaunches, AFailedCaptureLeavesNothingAndTheMapsAreBounded) {
  GraphLaunches g(4);
  g.captured_launch(1, {"k", {"t"}});
  g.end_capture(1, 0);  // cuStreamEndCapture failed: no graph
  g.instantiated(0, 0x300);
  EXPECT_TRUE(g.launched(0x300, 1).empty());
  for (uint64_t c = 10; c < 20; ++c) g.captured_launch(c, {"k", {"t"}});
  EXPECT_EQ(g.forgotten(), 6u) << "captures past the limit are forgotten and counted";
  g.end_capture(19, 0x400);
  g.instantiated(0x400, 0x500);
  EXPECT_EQ(g.launched(0x500, 2).size(), 1u);
}
