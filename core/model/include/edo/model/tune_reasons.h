// The facts behind the tuner's advice, as data (issue 36 point 2): where a note, a choice's why,
// a verdict or an error tells the user which option to change, the tuner records a reason (a
// code and its figures) instead of naming a flag. Each front end words a reason its own way:
// the edo command with its flags (command_words(), also what stored runs and plan files keep),
// the dashboard with its fields' names (gui/model/src/tune_words.cpp).
//
// A text that holds reasons is kept in the command's words with each reason's place in it
// marked (TuneReason::at, length), as a compiler's diagnostic marks its fix-its: the stored text
// and the plan document stay exactly what they were, and another front end replaces each marked
// place with its own words for that reason (in_words()). A text stored before reasons were
// recorded has none marked and reads as stored.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edo::model {

// What the advice or the fact is about. Each code's figures are in TuneReason's fields as its
// comment says; command_words() is the reference wording.
enum class Reason {
  kRecordWeights,             // errors on synthetic weights: record the job's weights
  kChangeMaxError,            // the error limit is the default: how to change it or drop it
  kLargerTimeLimit,           // a larger time limit `name` ("measures more", "replays more"...)
  kLargerMaxError,            // a larger error limit `name` ("times them")
  kOverMaxError,              // over the error limit `value`
  kLowerMeasureBytes,         // a measurement did not fit in memory: measure fewer bytes
  kOutsideTables,             // a table the tables pattern left out (or not encodable)
  kUseCpuBackend,             // the asked backend is not usable here: use the CPU's
  kNoTableMatches,            // the tables pattern `name` matches none of `detail` (a list)
  kTakenUnvalidated,          // a candidate chosen although its loss was not validated
  kAllowUnvalidated,          // unvalidated candidates are not chosen unless allowed
  kStoppedByTimeLimit,        // the run stopped at its time limit `value` seconds (NaN: not said)
  kBeforeTimeLimitStopped,    // what was measured before the time limit stopped the run
  kRaiseMaxError,             // no plan within the error limit: raise it
  kRaiseTimeLimitOrMaxError,  // no plan among what was measured within the error limit
  kRaiseTierBudget,           // the `name` ("host", "SSD") budget is short: raise it
  kTierBudgetsTogether,       // no choice meets the device, host and SSD budgets together
  kTargetDeviceGiven,         // times modelled for the GPU the user chose
  kCpuBackendGiven,           // times measured on the CPU because the user chose it
  kUseTargetDevice,           // model a stored GPU instead (stored: `detail`)
  kWithinTimeLimit,           // `name` ("not replayed") within the time limit
  kVocabRemapExport,          // the id remap of a trimmed vocabulary at coverage `name` %
  kWrittenByExport,           // a file edo export writes in format `name` ("torchrec", "json")
  kBenchStorage,              // storage figures measured by edo bench's storage benchmark
  kSaveStorageProfile,        // how to measure and save storage figures
  kBenchBackend,              // device figures measured by edo bench on backend `name`
  kSaveDeviceProfile,         // how to measure and save a GPU's profile
  kBenchJson,                 // edo bench's JSON output (edo.bench/1)
  kUnknownTargetDevice,       // `name` is neither a stored device (`detail`) nor a profile file
};

struct TuneReason {
  Reason code = Reason::kRecordWeights;
  double value = std::numeric_limits<double>::quiet_NaN();  // a figure: a limit, seconds
  std::string name{};    // a name or phrase it is about (a pattern, a tier, what a larger limit does)
  std::string detail{};  // a second one (the tables a pattern did not match, the stored GPUs)
  // Where the command's words for it are in the text it belongs to: the `line`-th of a run's
  // notes (0 for a one-line text), `length` bytes from byte `at`.
  uint32_t line = 0;
  uint32_t at = 0;
  uint32_t length = 0;

  bool operator==(const TuneReason&) const = default;
};

// A front end's words for a reason.
class ReasonWords {
 public:
  virtual ~ReasonWords() = default;
  virtual std::string say(const TuneReason& reason) const = 0;
};

// A reason's figure as every wording writes it: printf's "%g" ("0.02", "inf").
std::string reason_figure(double value);

// The edo command's words (its flags: "over --max-error 0.02"): what `edo tune` prints and what
// the .edodb and the plan documents keep. In this layer because the store and the plan writer,
// below the command, write them.
const ReasonWords& command_words();

// Appends the command's words for `reason` to `text` and marks their place in `reasons`.
void say(std::string& text, std::vector<TuneReason>& reasons, TuneReason reason);
// The same, for the note the result is about to get at index `line`.
inline void say_in_line(std::string& text, std::vector<TuneReason>& reasons, uint32_t line, TuneReason reason) {
  reason.line = line;
  say(text, reasons, std::move(reason));
}

// `text` (line `line` of its record) with each reason marked in it worded by `words` instead.
// A mark that does not hold the command's words for its reason (a hand-edited file) is left as
// it is.
std::string in_words(const std::string& text, const std::vector<TuneReason>& reasons, const ReasonWords& words,
                     uint32_t line = 0);

// Copies of `from`'s reasons, moved `by` bytes later in their text (a text prefixed) and into
// `line`.
std::vector<TuneReason> shifted(const std::vector<TuneReason>& from, uint32_t by, uint32_t line = 0);

// How reasons are stored (one TEXT column, docs/database.md): one line per reason, its fields
// separated by tabs (the code's word, value, name, detail, line, at, length; tabs, newlines and
// backslashes in names escaped). "" for none. decode_reasons() returns nullopt for a value it
// cannot read (a corrupt file).
std::string encode_reasons(const std::vector<TuneReason>& reasons);
std::optional<std::vector<TuneReason>> decode_reasons(std::string_view stored);

}  // namespace edo::model
