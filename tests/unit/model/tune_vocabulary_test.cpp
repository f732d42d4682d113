// The tuner's vocabularies (edo/model/tune_vocabulary.h): every value has one stored word, and
// the word reads back as that value, so stored runs and plan files keep the words they always
// had. The words are the ones written before the enums existed (docs/database.md, formats.md).
#include <gtest/gtest.h>

#include "edo/model/tune_vocabulary.h"

namespace edo::model {
namespace {

template <class E>
void expect_words(std::initializer_list<std::pair<E, const char*>> expected) {
  for (const auto& [value, word] : expected) {
    EXPECT_EQ(to_string(value), word);
    const std::optional<E> back = from_string<E>(word);
    ASSERT_TRUE(back.has_value()) << word;
    EXPECT_EQ(*back, value) << word;
  }
}

TEST(TuneVocabulary, EachValueRoundTripsItsStoredWord) {
  expect_words<TimingKind>({{TimingKind::kNone, ""}, {TimingKind::kMeasured, "measured"}, {TimingKind::kTwin, "twin"},
                            {TimingKind::kPredicted, "predicted"}});
  expect_words<RunTiming>({{RunTiming::kMeasured, "measured"}, {RunTiming::kModelled, "modelled"}});
  expect_words<Objective>({{Objective::kSpeed, "speed"}, {Objective::kLeastChange, "least-change"}});
  expect_words<StopReason>({{StopReason::kNone, ""}, {StopReason::kTimeLimit, "time limit"}, {StopReason::kCancelled, "cancelled"}});
  expect_words<RejectionCause>({{RejectionCause::kNone, ""},
                                {RejectionCause::kUnsafeInFormat, "unsafe_in_format"},
                                {RejectionCause::kSparseGradientRefused, "sparse_gradient_refused"}});
}

TEST(TuneVocabulary, AnUnknownWordIsNoValue) {
  EXPECT_FALSE(from_string<TimingKind>("guessed").has_value());
  EXPECT_FALSE(from_string<RunTiming>("").has_value()) << "a run is always measured or modelled";
  EXPECT_FALSE(from_string<Objective>("Speed").has_value()) << "words are case-sensitive, as stored";
  EXPECT_FALSE(from_string<StopReason>("time-limit").has_value());
}

TEST(TuneVocabulary, AllowedWordsNameEveryStoredWord) {
  EXPECT_EQ(allowed_words<TimingKind>(), "measured, twin or predicted");
  EXPECT_EQ(allowed_words<Objective>(), "speed or least-change");
  EXPECT_EQ(allowed_words<StopReason>(), "time limit or cancelled");
}

}  // namespace
}  // namespace edo::model
