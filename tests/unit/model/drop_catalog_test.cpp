// The drop counters' catalog (core/drops/include/edo/drops/catalog.h): one declaration each,
// read by the report (describe_drop, lifting_settings, dropped_events_of) and listed in
// docs/losses.md. That the tracer cannot emit a name outside it is checked by compiling
// (tests/unit/model/CMakeLists.txt: drop_catalog_unknown_name_does_not_compile).
#include "edo/drops/catalog.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "edo/model/drops.h"

namespace edo::model {
namespace {

std::set<std::string> catalog_names() {
  std::set<std::string> names;
  for (const auto& c : drops::kCatalog) names.insert(std::string(c.name));
  return names;
}

TEST(DropCatalog, NamesAreUniqueAndFamiliesArePrefixes) {
  EXPECT_EQ(catalog_names().size(), std::size(drops::kCatalog));
  for (const auto& c : drops::kCatalog) {
    EXPECT_FALSE(c.meaning.empty()) << c.name;
    EXPECT_EQ(c.family, c.name.back() == ':') << c.name;
  }
}

// The tracer's names are checked at compile time; here, the doc a user reads says the same:
// the first table of docs/losses.md has one row per catalog counter, no more, no fewer.
TEST(DropCatalog, DocsLossesListsEveryCounterOnce) {
  std::ifstream f(std::string(EDO_SOURCE_DIR) + "/docs/losses.md");
  ASSERT_TRUE(f) << "docs/losses.md";
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string doc = ss.str();
  const size_t start = doc.find("| counter | kind | what was lost |");
  ASSERT_NE(start, std::string::npos);
  const size_t end = doc.find("\n\n", start);
  const std::string table = doc.substr(start, end - start);
  std::set<std::string> documented;
  const std::regex row(R"(\n\| `([a-z_:]+)(<[a-z]+>)?` \|)");
  for (auto it = std::sregex_iterator(table.begin(), table.end(), row); it != std::sregex_iterator(); ++it)
    documented.insert((*it)[1].str());
  EXPECT_EQ(documented, catalog_names());
}

TEST(DropCatalog, AFamilyMemberReadsAsItsFamily) {
  const std::string member = "kernel_launches_args_unread:gather_kernel";
  const DropCounter* c = find_drop_counter(member);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->name, "kernel_launches_args_unread:");
  EXPECT_EQ(find_drop_counter("kernel_launches_args_unread:"), nullptr);  // the bare prefix is no member
  EXPECT_NE(describe_drop(member, 2).find("2 (launches of that kernel"), std::string::npos);
  EXPECT_NE(describe_drop("from_a_newer_edo", 1).find("a counter this edo does not know"), std::string::npos);
}

// dropped_events sums the events that lost data: not quantities, not what was only moved or
// delayed (severity info), and an unknown counter counts as events (it may be a loss).
TEST(DropCatalog, DroppedEventsSumLossesOnly) {
  EXPECT_EQ(dropped_events_of({{"batches", 3},
                               {"indices", 700},
                               {"device_counter_copies", 5},
                               {"device_counters_no_memory", 2},
                               {"kernel_launches_args_unread:k", 4},
                               {"from_a_newer_edo", 1}}),
            3u + 4u + 1u);
  EXPECT_EQ(lifting_settings({{"memory_bound_lookups", 9}, {"batches", 1}, {"indices", 10}}),
            "EDO_MAX_BUFFER_MB and EDO_MAX_MEMORY_MB");
}

}  // namespace
}  // namespace edo::model
