// Plans over N devices (issue 22 point 3, docs/tuning.md "Placement"): place_tables() on
// hand-made tables whose placement is worked out by hand in the comments (largest first, k the
// smallest number of shards that fits, ties to the lower device), and replan() over several
// devices on hand-built results (replan() measures nothing: bytes are exactly as written):
// every device within its budget, a choice that does not place is tightened, an infeasible
// budget names the smallest per-device budget that places, and the plan documents (JSON,
// import, TorchRec) carry the placement.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "edo/tuner/placement.h"
#include "edo/tuner/plan_io.h"
#include "edo/tuner/summary.h"
#include "hand_built_plan.h"
#include "edo/tuner/tuner.h"

namespace edo::tuner {
namespace {

constexpr uint64_t kMB = 1000 * 1000;

PlacementItem item(const std::string& name, uint64_t mb, double lookups, uint64_t rows = 1'000'000, uint32_t dim = 64) {
  return {name, mb * kMB, lookups, rows, dim};
}

std::vector<uint32_t> devices_of(const std::vector<model::TuneShard>& shards) {
  std::vector<uint32_t> out;
  for (const auto& s : shards) out.push_back(s.device);
  return out;
}

// What every placement must satisfy: each item's shards on distinct devices, their bytes adding up
// to the item's and their ranges covering its rows (or columns) once, each device within budget,
// the device totals the shards' sums.
void expect_sound(const std::vector<PlacementItem>& items, const Placement& p, uint32_t n, uint64_t budget) {
  ASSERT_TRUE(p.feasible) << p.unplaced;
  ASSERT_EQ(p.shards.size(), items.size());
  ASSERT_EQ(p.devices.size(), n);
  std::vector<uint64_t> held(n, 0);
  for (size_t i = 0; i < items.size(); ++i) {
    uint64_t bytes = 0, covered = 0;
    std::set<uint32_t> on;
    for (const auto& s : p.shards[i]) {
      ASSERT_LT(s.device, n);
      EXPECT_TRUE(on.insert(s.device).second) << items[i].name << " has two shards on device " << s.device;
      EXPECT_EQ(s.offset, covered) << items[i].name;
      covered += s.size;
      bytes += s.device_bytes;
      held[s.device] += s.device_bytes;
    }
    EXPECT_EQ(bytes, items[i].device_bytes) << items[i].name;
    const std::string& type = p.sharding[i];
    EXPECT_TRUE(type == "table_wise" || type == "row_wise" || type == "column_wise") << type;
    EXPECT_EQ(covered, type == "column_wise" ? items[i].dim : items[i].rows) << items[i].name;
    EXPECT_EQ(type == "table_wise", p.shards[i].size() == 1) << items[i].name;
  }
  for (uint32_t d = 0; d < n; ++d) {
    EXPECT_LE(held[d], budget) << "device " << d;
    EXPECT_EQ(p.devices[d].device_bytes, held[d]) << "device " << d;
  }
}

// The brief's example: tables of 250/120/90/60/30 MB hold 550 MB, more than 4 devices of 100 MB
// (400 MB): no placement, and the table that found no room is named.
TEST(Placement, TablesLargerThanAllDevicesTogetherDoNotPlace) {
  const std::vector<PlacementItem> items{item("t250", 250, 250), item("t120", 120, 120), item("t90", 90, 90),
                                         item("t60", 60, 60), item("t30", 30, 30)};
  const Placement p = place_tables(items, 4, 100 * kMB);
  EXPECT_FALSE(p.feasible);
  EXPECT_FALSE(p.unplaced.empty());
}

// The same tables on 6 devices of 100 MB (lookups in proportion to bytes; fair share 91.7):
//   t250: no device has 250 -> 3 row-wise shards of 83.3 MB on devices 0, 1, 2 (its lookups ask
//         for ceil(250 / 91.7) = 3 too);
//   t120: no device has 120 -> 2 shards of 60 MB: devices 3, 4 (the others have 16.7 or 100 free:
//         3 and 4 are the first with room and the least loaded);
//   t90:  whole on device 5 (the only one with 90 free);
//   t60:  no device has 60 -> 2 shards of 30 MB: devices 3 and 4 (40 MB free each);
//   t30:  no device has 30 (16.7, 10, 10) -> 2 shards of 15 MB: devices 0 and 1 (16.7 free).
TEST(Placement, BriefExampleOnSixDevicesSplitsTheLargeTablesRowWise) {
  const std::vector<PlacementItem> items{item("t250", 250, 250), item("t120", 120, 120), item("t90", 90, 90),
                                         item("t60", 60, 60), item("t30", 30, 30)};
  const Placement p = place_tables(items, 6, 100 * kMB);
  expect_sound(items, p, 6, 100 * kMB);
  EXPECT_EQ(p.sharding[0], "row_wise");
  EXPECT_EQ(devices_of(p.shards[0]), (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(p.shards[0][0].size, 333333u);  // rows 0..333332
  EXPECT_EQ(p.sharding[1], "row_wise");
  EXPECT_EQ(devices_of(p.shards[1]), (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(p.sharding[2], "table_wise");
  EXPECT_EQ(devices_of(p.shards[2]), (std::vector<uint32_t>{5}));
  EXPECT_EQ(devices_of(p.shards[3]), (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(devices_of(p.shards[4]), (std::vector<uint32_t>{0, 1}));
  // Shard bytes in proportion to rows: 333333 of 1000000 rows of 250 MB are 83333250 bytes.
  const std::vector<uint64_t> want{98333250, 98333250, 83333500, 90 * kMB, 90 * kMB, 90 * kMB};
  for (uint32_t d = 0; d < 6; ++d) EXPECT_EQ(p.devices[d].device_bytes, want[d]) << d;
}

// 4 devices of 100 MB, 250/40/30/20/10 MB (350 MB): t250 row-wise over 3 devices (83.3 MB each);
// t40, t30 and t20 only fit on device 3 (90 MB); t10 goes to device 0, the least loaded with
// room. Every device within 100 MB and the bytes within 10 MB of each other.
TEST(Placement, LargeTableRowWiseOverThreeAndTheRestBalanced) {
  const std::vector<PlacementItem> items{item("t250", 250, 250), item("t40", 40, 40), item("t30", 30, 30),
                                         item("t20", 20, 20), item("t10", 10, 10)};
  const Placement p = place_tables(items, 4, 100 * kMB);
  expect_sound(items, p, 4, 100 * kMB);
  EXPECT_EQ(p.sharding[0], "row_wise");
  EXPECT_EQ(p.shards[0].size(), 3u);
  for (size_t i = 1; i < items.size(); ++i) EXPECT_EQ(p.sharding[i], "table_wise") << items[i].name;
  EXPECT_EQ(devices_of(p.shards[1]), (std::vector<uint32_t>{3}));
  EXPECT_EQ(devices_of(p.shards[4]), (std::vector<uint32_t>{0}));
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& d : p.devices) {
    lo = std::min(lo, d.device_bytes);
    hi = std::max(hi, d.device_bytes);
  }
  EXPECT_EQ(hi, 93333250u);  // device 0: 83333250 + 10 MB
  EXPECT_EQ(lo, 83333250u);
}

// A small table read by 70 % of the lookups would make its device the bottleneck: it is split
// row-wise over ceil(70 / 25) = 3 devices although its bytes fit one, and no device serves more
// than a third of the lookups (table-wise, one would serve 70 %).
TEST(Placement, AHotTableIsSplitForItsLookups) {
  const std::vector<PlacementItem> items{item("hot", 40, 700), item("a", 40, 100), item("b", 40, 100), item("c", 40, 100)};
  const Placement p = place_tables(items, 4, 100 * kMB);
  expect_sound(items, p, 4, 100 * kMB);
  EXPECT_EQ(p.sharding[0], "row_wise");
  EXPECT_EQ(p.shards[0].size(), 3u);
  for (const auto& d : p.devices) EXPECT_LE(d.lookups_per_step, 1000.0 / 3 + 1e-6) << d.device;
  // Within 1.25 fair shares a table stays whole.
  const std::vector<PlacementItem> mild{item("warm", 40, 300), item("a", 40, 250), item("b", 40, 250), item("c", 40, 200)};
  const Placement q = place_tables(mild, 4, 100 * kMB);
  expect_sound(mild, q, 4, 100 * kMB);
  for (const auto& s : q.sharding) EXPECT_EQ(s, "table_wise");
}

// A table of two rows and a wide dim, larger than a device: row-wise cannot make more than 2
// shards (150 bytes each, over 100), 3 does not divide 1024, so 4 column-wise shards of 256
// columns (75 bytes each).
TEST(Placement, FewRowsAndAWideDimSplitColumnWise) {
  const std::vector<PlacementItem> items{{"wide", 300, 10, 2, 1024}};
  const Placement p = place_tables(items, 4, 100);
  expect_sound(items, p, 4, 100);
  EXPECT_EQ(p.sharding[0], "column_wise");
  ASSERT_EQ(p.shards[0].size(), 4u);
  for (const auto& s : p.shards[0]) {
    EXPECT_EQ(s.size, 256u);
    EXPECT_EQ(s.device_bytes, 75u);
    EXPECT_DOUBLE_EQ(s.lookups_per_step, 2.5);
  }
  // A width that does not split into shards divisible by 4 (TorchRec's column-wise rule) is not
  // split column-wise: no placement.
  EXPECT_FALSE(place_tables({{"odd", 300, 10, 2, 1022}}, 4, 100).feasible);
}

// Two 192 KB tables on 3 devices of 150 KB (384 of 450 KB). The fewest shards first: the first
// table in 2 shards of 96 KB (devices 0, 1), then the second finds 150 KB on device 2 and 54 KB
// on the others: neither 2 shards of 96 KB nor 3 of 64 KB fit. The second pass splits both
// tables over all 3 devices: 128 KB each.
TEST(Placement, WhenTheFewestShardsLeaveNoRoomTheSplitTablesSpreadWide) {
  const std::vector<PlacementItem> items{{"a", 192000, 10, 3000, 16}, {"b", 192000, 10, 3000, 16}};
  const Placement p = place_tables(items, 3, 150000);
  expect_sound(items, p, 3, 150000);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(p.sharding[i], "row_wise");
    EXPECT_EQ(devices_of(p.shards[i]), (std::vector<uint32_t>{0, 1, 2}));
  }
  for (const auto& d : p.devices) EXPECT_EQ(d.device_bytes, 128000u);
}

TEST(Placement, IsDeterministic) {
  std::vector<PlacementItem> items;
  for (int i = 0; i < 40; ++i) items.push_back(item("t" + std::to_string(i), 5 + (i * 37) % 90, (i * 53) % 400 + 1.0));
  const Placement a = place_tables(items, 16, 150 * kMB), b = place_tables(items, 16, 150 * kMB);
  expect_sound(items, a, 16, 150 * kMB);
  ASSERT_EQ(a.sharding, b.sharding);
  for (size_t i = 0; i < items.size(); ++i) EXPECT_EQ(devices_of(a.shards[i]), devices_of(b.shards[i]));
}

// ---- replan() over several devices --------------------------------------------------------

using testing::Opt;

// Tables of one row (they cannot be split): each with the options given, the first its baseline.
model::TuneResult hand_built(const std::vector<std::pair<std::string, std::vector<Opt>>>& tables, uint32_t devices,
                             uint64_t rows = 1) {
  return testing::hand_built(tables, {.devices = devices, .rows = rows, .dim = 1});
}

std::string strategy_of(const model::TuneResult& r, const std::string& table) {
  const model::TuneCandidate* c = testing::chosen(r, table);
  return c ? c->strategy : "";
}

const std::vector<Opt> kOpts{{"fp32", 65 * kMB, 100}, {"int8", 17 * kMB, 50, 0.005}};

// Three unsplittable 65 MB tables on 2 devices of 100 MB: all fp32 (195 MB) fits the total
// (200 MB) but not the devices (the third finds 35 MB free): the total is tightened and one table
// becomes int8 (65 + 17 on one device, 65 on the other).
TEST(PlacementPlan, AChoiceThatDoesNotPlaceIsTightened) {
  model::TuneResult r = hand_built({{"a", kOpts}, {"b", kOpts}, {"c", kOpts}}, 2);
  replan(r, 100 * kMB, INFINITY);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.budget_bytes, 100 * kMB);
  int int8 = 0;
  for (const char* t : {"a", "b", "c"}) int8 += strategy_of(r, t) == "int8";
  EXPECT_EQ(int8, 1);
  EXPECT_EQ(r.plan_device_bytes, 147 * kMB);
  const auto loads = device_loads(r);
  ASSERT_EQ(loads.size(), 2u);
  uint64_t sum = 0;
  for (const auto& d : loads) {
    EXPECT_LE(d.device_bytes, 100 * kMB);
    sum += d.device_bytes;
  }
  EXPECT_EQ(sum, r.plan_device_bytes);
  for (const auto& ch : r.choices) EXPECT_EQ(ch.sharding, "table_wise") << ch.table;
}

// 20 MB per device is too little: the fewest bytes (three int8 tables of 17 MB, unsplittable)
// need 34 MB on one of the 2 devices. The plan says so; with 34 MB per device it is found.
TEST(PlacementPlan, InfeasibleNamesTheSmallestPerDeviceBudget) {
  model::TuneResult r = hand_built({{"a", kOpts}, {"b", kOpts}, {"c", kOpts}}, 2);
  replan(r, 20 * kMB, INFINITY);
  EXPECT_FALSE(r.feasible);
  EXPECT_TRUE(r.choices.empty());
  EXPECT_EQ(r.min_feasible_bytes, 34 * kMB);
  const std::string verdict = verdict_text(r);
  EXPECT_NE(verdict.find("per device on 2 devices"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("(34000000 bytes)"), std::string::npos) << verdict;
  replan(r, 34 * kMB, INFINITY);
  EXPECT_TRUE(r.feasible);
  replan(r, 34 * kMB - 1, INFINITY);
  EXPECT_FALSE(r.feasible);
}

// One device: replan() is the single-device plan, with no placement.
TEST(PlacementPlan, OneDeviceHasNoPlacement) {
  model::TuneResult one = hand_built({{"a", kOpts}, {"b", kOpts}, {"c", kOpts}}, 1);
  replan(one, 200 * kMB, INFINITY);
  ASSERT_TRUE(one.feasible);
  EXPECT_EQ(one.plan_device_bytes, 195 * kMB);
  for (const auto& ch : one.choices) {
    EXPECT_TRUE(ch.sharding.empty());
    EXPECT_TRUE(ch.shards.empty());
  }
  EXPECT_TRUE(device_loads(one).empty());
  EXPECT_TRUE(placement_lines(one).empty());
  EXPECT_FALSE(plan_to_json(one).contains("per_device"));
  EXPECT_EQ(plan_to_json(one)["devices"], 1);
}

// An offloaded table places only its device bytes (its cache), not the rows kept on the host.
TEST(PlacementPlan, AnOffloadedTablePlacesItsDeviceBytesOnly) {
  const std::vector<Opt> big{{"fp32", 300 * kMB, 100}, {"offload", 30 * kMB, 400}};
  model::TuneResult r = hand_built({{"big", big}, {"a", kOpts}}, 2, 1000);
  r.candidates[1].host_bytes = 300 * kMB;
  replan(r, 100 * kMB, INFINITY);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(strategy_of(r, "big"), "offload");
  uint64_t sum = 0;
  for (const auto& d : device_loads(r)) sum += d.device_bytes;
  EXPECT_EQ(sum, 95 * kMB);
}

// The placement travels in the plan documents: JSON (devices, per_device, each table's sharding)
// read back by plan import, and TorchRec's sharding_types / min_partition.
TEST(PlacementPlan, JsonAndImportCarryThePlacement) {
  const std::vector<Opt> big{{"fp32", 150 * kMB, 100}};
  model::TuneResult r = hand_built({{"big", big}, {"a", kOpts}, {"b", kOpts}}, 3, 1000);
  replan(r, 100 * kMB, INFINITY);
  ASSERT_TRUE(r.feasible);
  const auto j = plan_to_json(r);
  EXPECT_EQ(j["devices"], 3);
  ASSERT_EQ(j["per_device"].size(), 3u);
  uint64_t sum = 0;
  for (const auto& d : j["per_device"]) {
    EXPECT_LE(d["device_bytes"].get<uint64_t>(), 100 * kMB);
    sum += d["device_bytes"].get<uint64_t>();
  }
  EXPECT_EQ(sum, j["plan"]["device_bytes"].get<uint64_t>());
  std::map<std::string, std::string> type;
  for (const auto& t : j["tables"]) {
    type[t["name"]] = t["sharding"]["type"];
    EXPECT_EQ(t["sharding"]["devices"].size(), t["sharding"]["shards"].size());
  }
  EXPECT_EQ(type["big"], "row_wise");
  const model::TuneResult back = plan_from_json(j);
  EXPECT_EQ(back.devices, 3u);
  ASSERT_EQ(back.choices.size(), r.choices.size());
  for (size_t i = 0; i < r.choices.size(); ++i) {
    EXPECT_EQ(back.choices[i].sharding, r.choices[i].sharding);
    ASSERT_EQ(back.choices[i].shards.size(), r.choices[i].shards.size());
    for (size_t k = 0; k < r.choices[i].shards.size(); ++k) {
      EXPECT_EQ(back.choices[i].shards[k].device, r.choices[i].shards[k].device);
      EXPECT_EQ(back.choices[i].shards[k].device_bytes, r.choices[i].shards[k].device_bytes);
      EXPECT_EQ(back.choices[i].shards[k].size, r.choices[i].shards[k].size);
    }
  }
  EXPECT_EQ(plan_to_json(back)["per_device"], j["per_device"]);
  const std::string py = plan_to_torchrec(r);
  EXPECT_NE(py.find("sharding_types=[\"row_wise\"]"), std::string::npos) << py;
  EXPECT_NE(py.find("sharding_types=[\"table_wise\"]"), std::string::npos) << py;
  EXPECT_NE(py.find("\"devices\": 3"), std::string::npos);
}

// Plan import refuses a placement that is not one: over the budget, a shard on a device the plan
// does not have, shards that do not add up, per_device that disagrees, a sharding in a
// single-device plan.
TEST(PlacementPlan, ImportRefusesABrokenPlacement) {
  const std::vector<Opt> big{{"fp32", 150 * kMB, 100}};
  model::TuneResult r = hand_built({{"big", big}, {"a", kOpts}}, 3, 1000);
  replan(r, 100 * kMB, INFINITY);
  ASSERT_TRUE(r.feasible);
  const auto good = plan_to_json(r);
  auto expect_refused = [](nlohmann::ordered_json doc, const std::string& words) {
    try {
      (void)plan_from_json(doc);
      ADD_FAILURE() << "accepted; expected: " << words;
    } catch (const PlanError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  };
  auto doc = good;
  doc["budget_bytes"] = 10 * kMB;
  expect_refused(doc, "more than the budget");
  doc = good;
  doc["tables"][0]["sharding"]["shards"][0]["device"] = 7;
  doc["tables"][0]["sharding"]["devices"][0] = 7;
  expect_refused(doc, "not one of the plan's 3");
  doc = good;
  doc["tables"][0]["sharding"]["shards"][0]["device_bytes"] = 1;
  expect_refused(doc, "the shards hold");
  doc = good;
  doc["per_device"][0]["device_bytes"] = 5;
  expect_refused(doc, "disagrees with its shards");
  doc = good;
  doc["devices"] = 1;
  doc.erase("per_device");
  expect_refused(doc, "the plan is for one device");
  doc = good;
  doc["tables"][0]["sharding"]["type"] = "grid_shard";
  expect_refused(doc, "not table_wise, row_wise or column_wise");
  doc = good;
  doc["tables"][0].erase("sharding");
  expect_refused(doc, "has no \"sharding\"");
}

}  // namespace
}  // namespace edo::tuner
