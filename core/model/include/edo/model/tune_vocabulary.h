// The tuner's closed vocabularies (issue 36 point 2): how a candidate's step time was obtained,
// how a run timed its candidates, what a plan optimises, why a run stopped, why a candidate
// has no time and why one is never offered. Code compares these enums; their words appear only where a record is stored or
// exported (tune_fields.h columns, the plan document), through to_string() and from_string()
// below, so that stored runs and plan files keep the words they always had.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace edo::model {

// Where a candidate's step time comes from (docs/tuning.md "Representatives").
enum class TimingKind {
  kNone,       // not timed (or a run stored before this was recorded): ""
  kMeasured,   // measured on this table: "measured"
  kTwin,       // timed on a table of the same shape, dtype and access counts: "twin"
  kPredicted,  // its class representative's per-lookup time times this table's lookups: "predicted"
};

// How every step time of a run was obtained, never mixed: measured on this machine's backend,
// or modelled for a GPU that is not here (edo/tuner/device_model.h).
enum class RunTiming { kMeasured, kModelled };

// What a plan optimises: the fastest plan within the error limit ("speed"), or the least loss
// that fits the budget, then the fastest ("least-change").
enum class Objective { kSpeed, kLeastChange };

// Why a run stopped before every candidate was measured ("" when it did not).
enum class StopReason { kNone, kTimeLimit, kCancelled };

// Why a candidate has no step time (kept with the run, not stored: a stored candidate's note
// says it in words).
enum class NotTimedCause {
  kNone,              // timed (or not yet looked at)
  kOverErrorLimit,    // its error is over the limit: not timed, its error kept
  kWouldNotFinish,    // its measurement was predicted to outlast the time limit
  kStopped,           // the run stopped (time limit, Ctrl-C) before its turn
  kOutOfMemory,       // its measurement did not fit in memory
  kFailed,            // its measurement threw an error
  kRepresentativeNot, // a member of a class whose representative was not measured
};

// Why a measured candidate is never offered (TuneCandidate::rejected says it in words).
enum class RejectionCause {
  kNone,                     // offered ("", and every candidate of a run stored before schema 18)
  kUnsafeInFormat,           // the job's optimizer, simulated in its storage format, made a row non-finite
  kSparseGradientRefused,    // the sparse-gradient optimizer lever cannot carry the job's settings
};

namespace vocabulary_detail {
template <class E, size_t N>
using Words = std::array<std::pair<E, std::string_view>, N>;

inline constexpr Words<TimingKind, 4> kTimingKind{
    {{TimingKind::kNone, ""}, {TimingKind::kMeasured, "measured"}, {TimingKind::kTwin, "twin"}, {TimingKind::kPredicted, "predicted"}}};
inline constexpr Words<RunTiming, 2> kRunTiming{{{RunTiming::kMeasured, "measured"}, {RunTiming::kModelled, "modelled"}}};
inline constexpr Words<Objective, 2> kObjective{{{Objective::kSpeed, "speed"}, {Objective::kLeastChange, "least-change"}}};
inline constexpr Words<StopReason, 3> kStopReason{
    {{StopReason::kNone, ""}, {StopReason::kTimeLimit, "time limit"}, {StopReason::kCancelled, "cancelled"}}};

inline constexpr Words<RejectionCause, 3> kRejectionCause{{{RejectionCause::kNone, ""},
                                                           {RejectionCause::kUnsafeInFormat, "unsafe_in_format"},
                                                           {RejectionCause::kSparseGradientRefused, "sparse_gradient_refused"}}};

constexpr const auto& words_of(TimingKind) { return kTimingKind; }
constexpr const auto& words_of(RejectionCause) { return kRejectionCause; }
constexpr const auto& words_of(RunTiming) { return kRunTiming; }
constexpr const auto& words_of(Objective) { return kObjective; }
constexpr const auto& words_of(StopReason) { return kStopReason; }
}  // namespace vocabulary_detail

// The stored word of a value ("twin", "least-change", "time limit"...).
template <class E>
  requires requires(E e) { vocabulary_detail::words_of(e); }
constexpr std::string_view to_string(E e) {
  for (const auto& [value, word] : vocabulary_detail::words_of(e))
    if (value == e) return word;
  return {};
}

// The value a stored word names; nullopt for a word that is none of them (a corrupt file, a
// plan from a newer edo).
template <class E>
  requires requires(E e) { vocabulary_detail::words_of(e); }
constexpr std::optional<E> from_string(std::string_view word) {
  for (const auto& [value, w] : vocabulary_detail::words_of(E{}))
    if (w == word) return value;
  return std::nullopt;
}

// The words a field of type E may hold, "a, b or c" (for an error naming what was expected).
template <class E>
  requires requires(E e) { vocabulary_detail::words_of(e); }
std::string allowed_words() {
  std::string out;
  const auto& words = vocabulary_detail::words_of(E{});
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i].second.empty()) continue;
    if (!out.empty()) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i].second;
  }
  return out;
}

}  // namespace edo::model
