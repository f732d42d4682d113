#include <gtest/gtest.h>

#include <map>

#include "config.h"

using edo::capture::parse_config;

namespace {
edo::capture::Config parse(const std::map<std::string, std::string>& env, std::vector<std::string>* w) {
  return parse_config(
      [&](const char* n) -> const char* {
        auto it = env.find(n);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      w);
}
}  // namespace

TEST(Config, DefaultsAreInertAndDocumented) {
  std::vector<std::string> w;
  auto c = parse({}, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_FALSE(c.active());
  EXPECT_EQ(c.flush_ms, 1000u);
  EXPECT_EQ(c.exact_rows, uint64_t{1} << 26);
  EXPECT_TRUE(c.async);
  EXPECT_TRUE(c.cuda);
  EXPECT_GE(edo::capture::documented_variables().size(), 12u);
}

TEST(Config, ValidValuesAreTaken) {
  std::vector<std::string> w;
  auto c = parse({{"EDO_OUTPUT", "/tmp/x"}, {"EDO_FLUSH_MS", "250"}, {"EDO_EXACT_ROWS", "1000"},
                  {"EDO_ASYNC", "0"}, {"EDO_VERBOSE", "yes"}, {"EDO_CUDA_CAPTURE", "off"}, {"EDO_ROOT_PID", "77"}},
                 &w);
  EXPECT_TRUE(w.empty());
  EXPECT_TRUE(c.active());
  EXPECT_EQ(c.flush_ms, 250u);
  EXPECT_EQ(c.exact_rows, 1000u);
  EXPECT_FALSE(c.async);
  EXPECT_TRUE(c.verbose);
  EXPECT_FALSE(c.cuda);
  EXPECT_EQ(c.root_pid, 77);
}

TEST(Config, BadValuesWarnOnceEachAndKeepTheDefault) {
  std::vector<std::string> w;
  auto c = parse({{"EDO_FLUSH_MS", "-5"}, {"EDO_MAX_BUFFER_MB", "99999999999999999999999"},
                  {"EDO_TOPK", "3"}, {"EDO_ASYNC", "sometimes"}},
                 &w);
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(c.flush_ms, 1000u);
  EXPECT_EQ(c.max_buffer_mb, 256u);
  EXPECT_EQ(c.top_k, 65536u);
  EXPECT_TRUE(c.async);
  EXPECT_NE(w[0].find("EDO_FLUSH_MS='-5'"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("using the default 1000"), std::string::npos) << w[0];
  for (auto& line : w) EXPECT_EQ(line.find('\n'), std::string::npos);
}
