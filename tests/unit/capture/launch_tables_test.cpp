// LaunchTables: the tables of launches waiting for their kernel records, by either of a
// launch's correlation ids; bounded (the oldest forgotten and counted); its ring and index
// grow past what was made up front and keep every waiting launch.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "launch_tables.h"

using edo::capture::LaunchInfo;
using edo::capture::LaunchTables;

namespace {

std::shared_ptr<const edo::wire::AddressIndex> index_of(const std::vector<std::string>& names) {
  edo::wire::AddressIndex::Builder b;
  uint64_t base = 0x10000;
  for (const auto& n : names) b.add(base, 0x100, n), base += 0x1000;
  return std::make_shared<const edo::wire::AddressIndex>(std::move(b).build());
}

LaunchInfo launch(uint32_t correlation, uint32_t driver_correlation = 0) {
  LaunchInfo l;
  l.correlation = correlation;
  l.driver_correlation = driver_correlation;
  return l;
}

void put(LaunchTables& lt, const LaunchInfo& l, const std::shared_ptr<const edo::wire::AddressIndex>& idx) {
  std::vector<const std::string*> names;
  for (const auto& e : idx->entries()) names.push_back(&e.name);
  lt.put(l, idx, names.data(), names.size());
}

}  // namespace

TEST(LaunchTables, EitherIdFindsTheLaunchOnce) {
  LaunchTables lt;
  auto idx = index_of({"emb.a", "emb.b"});
  put(lt, launch(10, 11), idx);
  put(lt, launch(12), index_of({"emb.c"}));
  EXPECT_EQ(lt.size(), 2u);
  EXPECT_EQ(lt.take(11), (std::vector<std::string>{"emb.a", "emb.b"})) << "the driver launch's id";
  EXPECT_TRUE(lt.take(10).empty()) << "taken once, by either id";
  EXPECT_TRUE(lt.take(99).empty());
  EXPECT_TRUE(lt.take(0).empty());
  EXPECT_EQ(lt.take(12), std::vector<std::string>{"emb.c"});
  EXPECT_EQ(lt.size(), 0u);
  EXPECT_EQ(lt.forgotten(), 0u);
}

TEST(LaunchTables, MoreTablesThanInlineAreKept) {
  LaunchTables lt;
  std::vector<std::string> names;
  for (int i = 0; i < 7; ++i) names.push_back("emb." + std::to_string(i));
  put(lt, launch(5), index_of(names));
  EXPECT_EQ(lt.take(5), names);
}

TEST(LaunchTables, GrowsPastWhatWasMadeAndForgetsPastTheCapacity) {
  // 4 made up front, 16 at most: 40 launches waiting, the oldest 24 forgotten; the rest, taken
  // out of order, all found (the index survives growth and deletions).
  LaunchTables lt(16, 4);
  auto idx = index_of({"emb.a"});
  for (uint32_t c = 1; c <= 40; ++c) put(lt, launch(2 * c, 2 * c + 1), idx);
  EXPECT_EQ(lt.forgotten(), 24u);
  EXPECT_EQ(lt.size(), 16u);
  for (uint32_t c = 1; c <= 24; ++c) EXPECT_TRUE(lt.take(2 * c).empty()) << c;
  for (uint32_t c = 40; c > 24; c -= 2) EXPECT_EQ(lt.take(2 * c + 1), std::vector<std::string>{"emb.a"}) << c;
  for (uint32_t c = 25; c <= 40; c += 2) EXPECT_EQ(lt.take(2 * c), std::vector<std::string>{"emb.a"}) << c;
  EXPECT_EQ(lt.size(), 0u);
  // Taken launches make room: no more are forgotten.
  for (uint32_t c = 100; c < 200; ++c) {
    put(lt, launch(c), idx);
    EXPECT_EQ(lt.take(c), std::vector<std::string>{"emb.a"});
  }
  EXPECT_EQ(lt.forgotten(), 24u);
}
