#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "edo/capture/config.h"

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

// Every variable the library documents, fed garbage, negative, too large and out-of-range
// values: one warning naming it, the default kept. A documented variable without a row here
// fails the test.
namespace {
struct VarCase {
  const char* name;
  std::vector<std::string> bad;                                 // values that must be refused
  std::function<std::string(const edo::capture::Config&)> field;  // the setting, as text
  std::string default_shown;                                    // "using the default ..."
};

std::string u(uint64_t v) { return std::to_string(v); }

const std::vector<std::string> kNotNumbers = {"abc", "-1", "-0", "99999999999999999999999", "1e3", " 5", "5 ", "0x10",
                                              "5ms", "+7", "1.5", "\x1b[31m9"};
const std::vector<std::string> kNotBools = {"abc", "-1", "2", "99999999999999999999999", "yess", " 1"};
const std::vector<std::string> kNotPids = {"abc", "-1", "0", "99999999999999999999999", "4194305"};

std::vector<std::string> plus(std::vector<std::string> a, std::vector<std::string> b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const std::vector<VarCase>& var_cases() {
  using edo::capture::Config;
  static const std::vector<VarCase> cases = {
      {"EDO_FLUSH_MS", plus(kNotNumbers, {"0", "9", "3600001"}), [](const Config& c) { return u(c.flush_ms); }, "1000"},
      {"EDO_EXACT_ROWS", plus(kNotNumbers, {"1099511627777"}), [](const Config& c) { return u(c.exact_rows); }, "67108864"},
      {"EDO_TOPK", plus(kNotNumbers, {"0", "15", "16777217"}), [](const Config& c) { return u(c.top_k); }, "65536"},
      {"EDO_MAX_BUFFER_MB", plus(kNotNumbers, {"0", "1048577"}), [](const Config& c) { return u(c.max_buffer_mb); }, "256"},
      {"EDO_MAX_EVENTS", plus(kNotNumbers, {"0", "15", "1073741825"}), [](const Config& c) { return u(c.max_events); }, "1048576"},
      {"EDO_WINDOW_STEPS", plus(kNotNumbers, {"1099511627777"}), [](const Config& c) { return u(c.window_steps); }, "0"},
      {"EDO_MAX_MEMORY_MB", plus(kNotNumbers, {"0", "15", "1048577"}), [](const Config& c) { return u(c.max_memory_mb); }, "4096"},
      {"EDO_MAX_DEVICE_MB", plus(kNotNumbers, {"0", "15", "1048577"}), [](const Config& c) { return u(c.max_device_mb); }, "1024"},
      {"EDO_ASYNC", kNotBools, [](const Config& c) { return u(c.async); }, "1"},
      {"EDO_LRU", kNotBools, [](const Config& c) { return u(c.lru); }, "1"},
      {"EDO_CUDA_CAPTURE", kNotBools, [](const Config& c) { return u(c.cuda); }, "1"},
      {"EDO_VERBOSE", kNotBools, [](const Config& c) { return u(c.verbose); }, "0"},
      {"EDO_WEIGHTS", kNotBools, [](const Config& c) { return u(c.weights); }, "0"},
      {"EDO_WEIGHT_ROWS", plus(kNotNumbers, {"0", "15", "16777217"}), [](const Config& c) { return u(c.weight_rows); }, "65536"},
      {"EDO_TORCH", kNotBools, [](const Config& c) { return u(c.torch); }, "1"},
      {"EDO_TORCH_SCAN", kNotBools, [](const Config& c) { return u(c.torch_scan); }, "1"},
      {"EDO_ROOT_PID", kNotPids, [](const Config& c) { return std::to_string(c.root_pid); }, "(unset)"},
      {"EDO_OUTPUT_OWNER", kNotPids, [](const Config& c) { return std::to_string(c.output_owner); }, "(unset)"},
      {"EDO_RUN_ID", {"bad id", "UPPER", std::string(33, 'a'), "x\x1b[31m", "-1"}, [](const Config& c) { return c.run_id; },
       "(a new run id)"},
      {"EDO_CHANNEL", {std::string(108, 'x'), "/tmp/" + std::string(200, 'a') + ".sock"},
       [](const Config& c) { return c.channel; }, "(unset: no collector)"},
      // Any text is a file name: an unwritable EDO_OUTPUT is reported, naming it, when first
      // written (TracerE2E); a missing EDO_CUPTI_PATH when CUPTI is loaded; a missing
      // EDO_TRACE_LIB is replaced by the library's own path (JobEnvironment).
      {"EDO_OUTPUT", {}, nullptr, ""},
      {"EDO_UNSENT", {}, nullptr, ""},  // a prefix of file names, like EDO_OUTPUT (set by edo record)
      {"EDO_CUPTI_PATH", {}, nullptr, ""},
      {"EDO_TRACE_LIB", {}, nullptr, ""},
  };
  return cases;
}
}  // namespace

TEST(Config, EveryVariableRefusesBadValuesWithOneWarningAndKeepsItsDefault) {
  std::set<std::string> covered;
  int tried = 0;
  for (const auto& vc : var_cases()) {
    covered.insert(vc.name);
    if (!vc.field) continue;
    std::vector<std::string> none;
    const std::string def = vc.field(parse({}, &none));
    for (const auto& bad : vc.bad) {
      ++tried;
      std::vector<std::string> w;
      const auto c = parse({{vc.name, bad}}, &w);
      ASSERT_EQ(w.size(), 1u) << vc.name << "='" << bad << "'";
      EXPECT_EQ(vc.field(c), def) << vc.name << "='" << bad << "'";
      EXPECT_EQ(w[0].rfind(std::string("edo: ignoring ") + vc.name + "='", 0), 0u) << w[0];
      EXPECT_NE(w[0].find("; using the default " + vc.default_shown), std::string::npos) << w[0];
      EXPECT_EQ(w[0].find('\n'), std::string::npos) << w[0];
      EXPECT_EQ(w[0].find('\x1b'), std::string::npos) << "a control character reached the terminal: " << w[0];
    }
    // Empty is unset: no warning, the default.
    std::vector<std::string> w;
    EXPECT_EQ(vc.field(parse({{vc.name, ""}}, &w)), def) << vc.name;
    EXPECT_TRUE(w.empty()) << vc.name;
  }
  for (const auto& doc : edo::capture::documented_variables())
    EXPECT_TRUE(covered.count(doc.name)) << doc.name << " is documented but has no row in var_cases()";
  EXPECT_GE(tried, 140);
}

TEST(Config, BadNumbersSayWhatIsWrong) {
  std::vector<std::string> w;
  parse({{"EDO_FLUSH_MS", "-5"}, {"EDO_TOPK", "99999999999999999999999"}, {"EDO_MAX_EVENTS", "7"}, {"EDO_LRU", "x"}}, &w);
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0], "edo: ignoring EDO_FLUSH_MS='-5' (negative: must be between 10 and 3600000); using the default 1000");
  EXPECT_EQ(w[1], "edo: ignoring EDO_TOPK='99999999999999999999999' (too large: must be between 16 and 16777216); "
                  "using the default 65536");
  EXPECT_EQ(w[2], "edo: ignoring EDO_MAX_EVENTS='7' (must be between 16 and 1073741824); using the default 1048576");
  EXPECT_EQ(w[3], "edo: ignoring EDO_LRU='x' (expected 1, true, yes or on to turn it on; 0, false, no or off to turn it "
                  "off); using the default 1");
}

// EDO_RUN_ID (issue 18 §3): inherited from the run's first process; a bad value is named and a
// new run starts; fresh ids are 16 hex digits and differ.
TEST(Config, RunIdIsInheritedOrMadeAfresh) {
  std::vector<std::string> w;
  EXPECT_EQ(parse({{"EDO_RUN_ID", "0123456789abcdef"}}, &w).run_id, "0123456789abcdef");
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(parse({{"EDO_RUN_ID", "bad id\n"}}, &w).run_id, "");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], "edo: ignoring EDO_RUN_ID='bad id?' (1-32 characters 0-9 a-z); using the default (a new run id)");
  const std::string a = edo::capture::new_run_id(), b = edo::capture::new_run_id();
  EXPECT_EQ(a.size(), 16u);
  EXPECT_TRUE(edo::capture::valid_run_id(a.c_str()));
  EXPECT_NE(a, b);
  EXPECT_FALSE(edo::capture::valid_run_id(""));
  EXPECT_FALSE(edo::capture::valid_run_id(std::string(33, 'a').c_str()));
}
