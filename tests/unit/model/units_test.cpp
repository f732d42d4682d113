#include <gtest/gtest.h>

#include "edo/model/units.h"

using edo::model::parse_size;

TEST(ParseSize, AcceptsTheDocumentedSpellings) {
  EXPECT_EQ(parse_size("24GiB"), uint64_t{24} << 30);
  EXPECT_EQ(parse_size("500MB"), uint64_t{500'000'000});
  EXPECT_EQ(parse_size("1.5TiB"), uint64_t{3} << 39);
  EXPECT_EQ(parse_size("4096"), uint64_t{4096});
  EXPECT_EQ(parse_size("4096B"), uint64_t{4096});
  EXPECT_EQ(parse_size("0"), uint64_t{0});
  EXPECT_EQ(parse_size("24 GiB"), uint64_t{24} << 30);
  EXPECT_EQ(parse_size("24gib"), uint64_t{24} << 30);
  EXPECT_EQ(parse_size("2kB"), uint64_t{2000});
  EXPECT_EQ(parse_size("2KB"), uint64_t{2000});
  EXPECT_EQ(parse_size("1PiB"), uint64_t{1} << 50);
  EXPECT_EQ(parse_size("0.1GB"), uint64_t{100'000'000});  // exact, no binary floating point
  EXPECT_EQ(parse_size("1.5KiB"), uint64_t{1536});
  EXPECT_EQ(parse_size("0.3KiB"), uint64_t{307});  // rounded down to a whole byte
  EXPECT_EQ(parse_size("18446744073709551615"), ~uint64_t{0});
  EXPECT_EQ(parse_size("1.00000000000000000000000000001GiB"), uint64_t{1} << 30);
}

TEST(ParseSize, RejectsEverythingElseWithAReason) {
  for (const char* bad : {"", "-1GiB", "+5", "GiB", ".5GiB", "5.", "1e9", "nan", "inf", "5 GiBs", "5  GiB",
                          "5GiB ", " 5GiB", "5XB", "1.5", "1.5B", "0x10", "18446744073709551616", "5 ",
                          "16384PiB", "99999999999999999999999999999999", "5\n"}) {
    std::string error;
    EXPECT_FALSE(parse_size(bad, &error).has_value()) << "'" << bad << "'";
    EXPECT_FALSE(error.empty()) << "'" << bad << "'";
  }
  std::string error;
  EXPECT_FALSE(parse_size(std::string_view("5\0GiB", 5), &error));
  EXPECT_NE(error.find("unknown unit"), std::string::npos) << error;
  EXPECT_FALSE(parse_size("-3GiB", &error));
  EXPECT_EQ(error, "a size has no sign");
}

TEST(ParseSize, LargestValuesNeverWrap) {
  EXPECT_EQ(parse_size("16383.999PiB"), uint64_t{18446742947809644773u});  // floor(16383.999 * 2^50)
  EXPECT_FALSE(parse_size("16384PiB"));
  EXPECT_EQ(parse_size("18446744073709551.615kB"), ~uint64_t{0});
  EXPECT_FALSE(parse_size("18446744073709551.616kB"));
}
