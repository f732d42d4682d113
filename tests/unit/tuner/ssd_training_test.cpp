// The SSD tier for a trained table (ssd_candidates.h): the optimizer FBGEMM's SSD TBE trains it
// with, its state's device bytes and the write-back a training step adds, against answers
// worked out by hand on two streams of 1000 lookups a step for 10 steps, rows of 16 fp32 (64 bytes):
//  * a cyclic scan (each step one pass over rows 0..999 of 4096): the device cache (L1) fitted
//    to it holds the whole cycle, so after the first pass nothing is evicted: no write-back;
//  * fresh rows (step k reads rows 1000k..1000k+999 of 10000): no reuse, so the L1 is FBGEMM's
//    smallest (32 rows) and misses every reference; once full it evicts one dirty row per lookup:
//    with no host cache (L2) each goes to the SSD, 1000 write-backs and 1000 SSD writes a step.
#include <gtest/gtest.h>


#include "recordings.h"
#include "ssd_candidates.h"
#include "ssd_replay.h"

namespace edo::tuner {
namespace {

TableGroup scan_group(bool trained, const std::string& optimizer, bool fresh = false) {
  std::vector<std::vector<int64_t>> steps(10);
  for (int64_t k = 0; k < 10; ++k)
    for (int64_t r = 0; r < 1000; ++r) steps[static_cast<size_t>(k)].push_back(fresh ? 1000 * k + r : r);
  const model::Table t = testing::recorded_steps("t", fresh ? 10000 : 4096, steps);
  TableGroup g;
  g.name = "t";
  g.rows = t.rows;
  g.dim = t.dim;
  g.dtype = "fp32";
  g.weight_bytes = t.weight_bytes;  // 262144 (640000 fresh)
  g.counts = t.aggregate;
  g.lookups_per_step = 1000;
  if (trained) {
    g.optimizer = optimizer;
    g.optimizer_bytes = optimizer == "adam" ? 2 * g.weight_bytes : optimizer.empty() ? 0 : g.rows * 4;
    g.grad_bytes = g.weight_bytes;
  }
  return g;
}

std::vector<Candidate> ssd_of(const TableGroup& g, const SsdLinks& links) {
  std::vector<Candidate> out(1);
  out[0].baseline = true;
  out[0].strategy = "fp32";
  out[0].set_spec("fp32");
  add_ssd_candidates(g, {100000, 0}, links, out);  // a host budget below the table's 262144 bytes
  out.erase(out.begin());
  return out;
}

TEST(SsdTraining, WriteBackTimeByHand) {
  SsdLinks links;  // 25 GB/s host link, no storage figures
  std::string basis;
  // 1000 write-backs of 64 bytes over 25 GB/s: 2.56 us; 1000 SSD writes (64000 bytes) at
  // TorchRec's 100 MiB/s: 64000 / 104857600 s = 610.3515625 us.
  EXPECT_DOUBLE_EQ(ssd_writeback_us(1000, 1000, 64, links, basis), 2.56 + 610.3515625);
  EXPECT_NE(basis.find("100 MiB/s"), std::string::npos) << basis;
  // Measured: 2 GB/s sequential writes: 64000 bytes in 32 us.
  kernels::StorageFigures f;
  f.seq_write_gbs = 2;
  links.storage = f;
  links.storage_source = "device profile test";
  EXPECT_DOUBLE_EQ(ssd_writeback_us(1000, 1000, 64, links, basis), 2.56 + 32);
  EXPECT_NE(basis.find("sequential write bandwidth"), std::string::npos) << basis;
}

TEST(SsdTraining, TheOptimizerIsRowwiseAdagradAndSaysWhyWhenItChanges) {
  std::string why;
  EXPECT_EQ(ssd_optimizer(scan_group(true, "rowwise_adagrad"), why), "");
  EXPECT_EQ(why, "");
  EXPECT_EQ(ssd_optimizer(scan_group(true, "adam"), why), "rowwise_adagrad");
  EXPECT_NE(why.find("trained with adam"), std::string::npos) << why;
  EXPECT_NE(why.find("EXACT_ROWWISE_ADAGRAD"), std::string::npos) << why;
  EXPECT_EQ(ssd_optimizer(scan_group(true, ""), why), "rowwise_adagrad");
  EXPECT_NE(why.find("SGD"), std::string::npos) << why;
}

// Each trained candidate against the same candidate of the table served (not trained): the
// checks common to both streams; `each` checks the stream's own write-backs.
template <class Each>
void expect_trained(bool fresh, uint64_t rows, Each each) {
  const SsdLinks links;
  const auto served = ssd_of(scan_group(false, "", fresh), links), trained = ssd_of(scan_group(true, "adam", fresh), links);
  ASSERT_FALSE(trained.empty()) << "a trained table past the host budget gets ssd candidates";
  ASSERT_EQ(trained.size(), served.size());
  for (size_t i = 0; i < trained.size(); ++i) {
    const Candidate &t = trained[i], &s = served[i];
    const model::StrategyParams& p = t.params;
    ASSERT_EQ(p.device_cache_rows, s.params.device_cache_rows);
    // Row-wise Adagrad's state: one fp32 for each row, on the device.
    EXPECT_EQ(t.device_bytes, s.device_bytes + rows * 4);
    EXPECT_EQ(t.host_bytes, s.host_bytes);
    EXPECT_EQ(t.ssd_bytes, rows * 64);
    EXPECT_EQ(t.optimizer, "rowwise_adagrad");
    EXPECT_TRUE(t.needs_retraining);
    EXPECT_EQ(p.optimizer, "rowwise_adagrad");
    EXPECT_EQ(p.optimizer_state_bytes, rows * 4);
    ASSERT_TRUE(p.optimizer_why);
    EXPECT_NE(p.optimizer_why->find("adam"), std::string::npos);
    each(p, t.added_us - s.added_us);
  }
}

TEST(SsdTraining, ATrainedTableIsOfferedWithItsStateAndWriteBacks) {
  int whole_cycle = 0, smallest_no_l2 = 0;
  expect_trained(false, 4096, [&](const model::StrategyParams& p, double more_us) {
    ASSERT_GE(p.device_cache_rows.value_or(0), 1000u);
    ++whole_cycle;
    EXPECT_EQ(p.writebacks_per_step, 0.0);
    EXPECT_EQ(p.ssd_writes_per_step, 0.0);
    EXPECT_DOUBLE_EQ(more_us, 0);
  });
  expect_trained(true, 10000, [&](const model::StrategyParams& p, double more_us) {
    ASSERT_EQ(p.device_cache_rows, 32u);
    if (p.host_cache_rows != 0u) return;
    ++smallest_no_l2;
    ASSERT_TRUE(p.writebacks_per_step && p.ssd_writes_per_step);
    EXPECT_DOUBLE_EQ(*p.writebacks_per_step, 1000);
    EXPECT_DOUBLE_EQ(*p.ssd_writes_per_step, 1000);
    EXPECT_DOUBLE_EQ(more_us, 2.56 + 610.3515625);  // SsdTraining.WriteBackTimeByHand's figures
  });
  EXPECT_GT(whole_cycle, 0);
  EXPECT_EQ(smallest_no_l2, 1);
}

TEST(SsdTraining, AJobOnRowwiseAdagradKeepsIt) {
  const auto kept = ssd_of(scan_group(true, "rowwise_adagrad"), SsdLinks{});
  ASSERT_FALSE(kept.empty());
  for (const Candidate& c : kept) {
    EXPECT_EQ(c.optimizer, "");
    EXPECT_FALSE(c.needs_retraining);
  }
}

}  // namespace
}  // namespace edo::tuner
