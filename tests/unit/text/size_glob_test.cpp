// Sizes as users write them, step times as they read them, and table globs.
#include <gtest/gtest.h>

#include "edo/model/profile_summary.h"

#include <cmath>

#include "edo/text/duration.h"
#include "edo/text/size.h"
#include "edo/text/glob.h"

namespace edo {
namespace {

TEST(Size, UnitsAndPlainBytes) {
  EXPECT_EQ(parse_size("24GiB"), uint64_t{24} << 30);
  EXPECT_EQ(parse_size("500MB"), 500'000'000u);
  EXPECT_EQ(parse_size("1.5TiB"), uint64_t{3} << 39);
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("12 KiB"), 12288u);
  EXPECT_EQ(parse_size("3gib"), uint64_t{3} << 30);
  EXPECT_EQ(parse_size("7B"), 7u);
  EXPECT_EQ(parse_size(".5KiB"), 512u);
}

TEST(Size, EverythingElseIsAnErrorNamingTheText) {
  for (const char* bad : {"", "GiB", "24Gib!", "-1GiB", "1.5", "1e9", "12 parsecs", "0x10", "1..5GiB", "24 GiB extra", "5b",
                          "999999999999999999999999TiB", "nan", "1,5GiB"}) {
    try {
      parse_size(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("'") + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("24GiB"), std::string::npos) << "names the accepted forms: " << what;
    }
  }
}

// One byte formatter for edo (model::format_bytes): what it writes, parse_size reads back (the
// dashboard's budget field shows it), to within its two decimals, up to the largest size.
TEST(Size, TheOneByteFormatterReadsBack) {
  EXPECT_EQ(model::format_bytes(512), "512 B");
  EXPECT_EQ(model::format_bytes(uint64_t{3} << 29), "1.50 GiB");
  EXPECT_EQ(model::format_bytes(UINT64_MAX), "16.00 EiB");
  for (uint64_t b : {uint64_t{0}, uint64_t{1000}, uint64_t{3} << 29, uint64_t{123456789012}, uint64_t{1} << 62}) {
    const uint64_t back = parse_size(model::format_bytes(b));
    EXPECT_NEAR(static_cast<double>(back), static_cast<double>(b), 0.005 * static_cast<double>(b) + 1) << b;
  }
}

TEST(Duration, ThreeSignificantDigitsInTheUnitThatKeepsThemBelowAThousand) {
  EXPECT_EQ(format_duration_us(1.3e4), "13.0 ms");
  EXPECT_EQ(format_duration_us(850), "850 us");
  EXPECT_EQ(format_duration_us(85.31), "85.3 us");
  EXPECT_EQ(format_duration_us(8.534), "8.53 us");
  EXPECT_EQ(format_duration_us(0.4123), "0.412 us");
  EXPECT_EQ(format_duration_us(999.96), "1.00 ms");  // rounding carries into the next unit
  EXPECT_EQ(format_duration_us(1234567), "1.23 s");
  EXPECT_EQ(format_duration_us(1.25e9), "1250 s");
  EXPECT_EQ(format_duration_us(0), "0 us");
  EXPECT_EQ(format_duration_us(NAN), "-");
  EXPECT_EQ(format_duration_us(INFINITY), "-");
  EXPECT_EQ(format_duration_us(-2296, true), "-2.30 ms");
  EXPECT_EQ(format_duration_us(45.6, true), "+45.6 us");
  EXPECT_EQ(format_duration_us(0, true), "0 us");
  EXPECT_EQ(format_duration_us(-850), "-850 us");
}

TEST(Glob, StarsQuestionMarksAndSets) {
  EXPECT_TRUE(glob_match("*", "anything"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("model.emb.*", "model.emb.user"));
  EXPECT_FALSE(glob_match("model.emb.*", "model.lm_head"));
  EXPECT_TRUE(glob_match("*table_1?", "synth.table_12"));
  EXPECT_FALSE(glob_match("*table_1?", "synth.table_1"));
  EXPECT_TRUE(glob_match("t[0-3]", "t2"));
  EXPECT_FALSE(glob_match("t[!0-3]", "t2"));
  EXPECT_TRUE(glob_match("a[b", "a[b"));  // an unclosed set is a literal '['
  EXPECT_TRUE(glob_match("*a*b*c*", "xxaxxbxxcxx"));
  EXPECT_FALSE(glob_match("*a*b*c*d", "xxaxxbxxcxx"));
  // Many stars against a long name: linear, no recursion.
  EXPECT_FALSE(glob_match(std::string(2000, '*') + "z", std::string(100000, 'a')));
}

}  // namespace
}  // namespace edo
