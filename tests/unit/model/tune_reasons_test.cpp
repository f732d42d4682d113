// The tuner's reasons (edo/model/tune_reasons.h): marked in the command's words where they are
// said, worded by another front end in their place, and stored and read back exactly.
#include <gtest/gtest.h>

#include <cmath>

#include "edo/model/tune_reasons.h"

namespace edo::model {
namespace {

// A front end that words every reason as "<code number>": shows what in_words() replaced.
class Numbered final : public ReasonWords {
 public:
  std::string say(const TuneReason& r) const override { return "<" + std::to_string(static_cast<int>(r.code)) + ">"; }
};

TEST(TuneReasons, SayingMarksTheCommandsWordsInTheText) {
  std::string text = "not timed: error 0.3, ";
  std::vector<TuneReason> reasons;
  say(text, reasons, {.code = Reason::kOverMaxError, .value = 0.02});
  EXPECT_EQ(text, "not timed: error 0.3, over --max-error 0.02");
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0].at, 22u);
  EXPECT_EQ(reasons[0].length, 21u);
  EXPECT_EQ(in_words(text, reasons, command_words()), text) << "the command's own words change nothing";
}

TEST(TuneReasons, AnotherFrontEndWordsEachMarkInItsPlace) {
  std::string text = "a (";
  std::vector<TuneReason> reasons;
  say(text, reasons, {.code = Reason::kLowerMeasureBytes});
  text += ") b ";
  say(text, reasons, {.code = Reason::kRaiseMaxError});
  EXPECT_EQ(in_words(text, reasons, Numbered()), "a (<5>) b <13>");
  // A note's reasons apply to their line only.
  EXPECT_EQ(in_words(text, reasons, Numbered(), 1), text);
  // A text moved behind a prefix keeps its marks when they are moved with it.
  const std::string prefixed = "not measured: " + text;
  EXPECT_EQ(in_words(prefixed, shifted(reasons, 14), Numbered()), "not measured: a (<5>) b <13>");
  // A mark that does not hold the command's words (an edited file) is left as it is.
  std::string edited = text;
  edited[4] = 'X';
  EXPECT_EQ(in_words(edited, reasons, Numbered()), edited.substr(0, edited.size() - 17) + "<13>");
}

TEST(TuneReasons, StoredReasonsReadBackExactly) {
  const std::vector<TuneReason> reasons{
      {.code = Reason::kNoTableMatches, .name = "emb.*\tx\\y", .detail = "a, b\nc", .line = 2, .at = 7, .length = 40},
      {.code = Reason::kOverMaxError, .value = 0.1 + 0.2, .at = 3, .length = 21},
      {.code = Reason::kStoppedByTimeLimit, .value = INFINITY},
      {.code = Reason::kVocabRemapExport}};
  const std::string stored = encode_reasons(reasons);
  EXPECT_EQ(stored.find("kOver"), std::string::npos) << "codes are stored by their word: " << stored;
  const auto back = decode_reasons(stored);
  ASSERT_TRUE(back.has_value()) << stored;
  ASSERT_EQ(back->size(), reasons.size());
  for (size_t i = 0; i < reasons.size(); ++i) {
    EXPECT_EQ((*back)[i].code, reasons[i].code);
    EXPECT_TRUE((*back)[i].value == reasons[i].value || (std::isnan((*back)[i].value) && std::isnan(reasons[i].value))) << i;
    EXPECT_EQ((*back)[i].name, reasons[i].name);
    EXPECT_EQ((*back)[i].detail, reasons[i].detail);
    EXPECT_EQ((*back)[i].line, reasons[i].line);
    EXPECT_EQ((*back)[i].at, reasons[i].at);
    EXPECT_EQ((*back)[i].length, reasons[i].length);
  }
  EXPECT_EQ(encode_reasons({}), "");
  EXPECT_TRUE(decode_reasons("").value().empty());
}

TEST(TuneReasons, ACorruptStoredValueIsNoReasons) {
  EXPECT_FALSE(decode_reasons("over_max_error\t0.02\t\t\t0\t0").has_value()) << "a field short";
  EXPECT_FALSE(decode_reasons("not_a_code\tnan\t\t\t0\t0\t0").has_value());
  EXPECT_FALSE(decode_reasons("over_max_error\tx\t\t\t0\t0\t0").has_value());
  EXPECT_FALSE(decode_reasons("over_max_error\t1\t\\q\t\t0\t0\t0").has_value()) << "an unknown escape";
  EXPECT_FALSE(decode_reasons("over_max_error\t1\t\t\t-1\t0\t0").has_value());
}

}  // namespace
}  // namespace edo::model
