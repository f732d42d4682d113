// The edo command's words for the tuner's reasons, marking them in texts, and their stored form
// (edo/model/tune_reasons.h).
#include "edo/model/tune_reasons.h"

#include <array>
#include <charconv>
#include <utility>

namespace edo::model {

namespace {

// A figure that reads back exactly (the shortest such text; "nan", "inf" included).
std::string figure_exact(double v) {
  char b[32];
  const auto [end, ec] = std::to_chars(b, b + sizeof b, v);
  return std::string(b, ec == std::errc() ? end : b);
}

// The flags of `edo tune` (cli/cmd_tune.cpp) and the phrases around them, as the command printed
// them before reasons were data: stored runs and plan documents keep exactly these.
class CommandWords final : public ReasonWords {
 public:
  std::string say(const TuneReason& r) const override {
    switch (r.code) {
      case Reason::kRecordWeights: return "record with 'edo record --weights' for errors on the job's weights";
      case Reason::kChangeMaxError: return "--max-error E to change it, --max-error inf for no limit";
      case Reason::kLargerTimeLimit: return "a larger --time-limit " + r.name;
      case Reason::kLargerMaxError: return "a larger --max-error " + r.name;
      case Reason::kOverMaxError: return "over --max-error " + reason_figure(r.value);
      case Reason::kLowerMeasureBytes: return " (lower --measure-bytes)";
      case Reason::kOutsideTables: return "outside --tables or not encodable";
      case Reason::kUseCpuBackend: return "use --backend cpu (or auto) on this machine";
      case Reason::kNoTableMatches: return "no table matches --tables '" + r.name + "' (tables: " + r.detail + ")";
      case Reason::kTakenUnvalidated: return "taken because of --allow-unvalidated";
      case Reason::kAllowUnvalidated: return "--allow-unvalidated to allow";
      case Reason::kStoppedByTimeLimit:
        return "stopped by --time-limit" + (std::isfinite(r.value) ? " " + reason_figure(r.value) + " s" : std::string());
      case Reason::kBeforeTimeLimitStopped: return "before --time-limit stopped the run";
      case Reason::kRaiseMaxError: return "raise --max-error";
      case Reason::kRaiseTimeLimitOrMaxError: return "raise --time-limit or --max-error";
      case Reason::kRaiseTierBudget: return std::string("raise ") + (r.name == "host" ? "--host-budget" : "--ssd-budget");
      case Reason::kTierBudgetsTogether:
        return "no choice of the tables' options meets --budget, --host-budget and --ssd-budget together (raise one)";
      case Reason::kTargetDeviceGiven: return "--target-device";
      case Reason::kCpuBackendGiven: return " (--backend cpu)";
      case Reason::kUseTargetDevice: return "--target-device NAME models a stored GPU instead (stored: " + r.detail + ")";
      case Reason::kWithinTimeLimit: return r.name + " within --time-limit";
      case Reason::kVocabRemapExport: return "the id remap is `edo export --format vocab-remap --coverage " + r.name + "`";
      case Reason::kWrittenByExport: return "`edo export --format " + r.name + "`";
      case Reason::kBenchStorage: return "edo bench --storage";
      case Reason::kSaveStorageProfile: return "'edo bench --storage DIR --save-device NAME' measures them";
      case Reason::kBenchBackend: return "edo bench --backend " + r.name;
      case Reason::kSaveDeviceProfile: return "'edo bench --backend cuda --save-device NAME' writes one";
      case Reason::kBenchJson: return "edo bench --json";
      case Reason::kUnknownTargetDevice:
        return "--target-device '" + r.name + "' is neither a stored device (" + r.detail +
               ") nor an edo.device/1 or edo.bench/1 JSON file; pick a stored one, or run 'edo bench --backend cuda "
               "--save-device NAME' on that GPU";
    }
    return {};
  }
};

// The stored word of each code (docs/database.md "Reasons"): never renamed, so that a file keeps
// its meaning.
constexpr std::array<std::pair<Reason, std::string_view>, 29> kCodeWords{{
    {Reason::kRecordWeights, "record_weights"},
    {Reason::kChangeMaxError, "change_max_error"},
    {Reason::kLargerTimeLimit, "larger_time_limit"},
    {Reason::kLargerMaxError, "larger_max_error"},
    {Reason::kOverMaxError, "over_max_error"},
    {Reason::kLowerMeasureBytes, "lower_measure_bytes"},
    {Reason::kOutsideTables, "outside_tables"},
    {Reason::kUseCpuBackend, "use_cpu_backend"},
    {Reason::kNoTableMatches, "no_table_matches"},
    {Reason::kTakenUnvalidated, "taken_unvalidated"},
    {Reason::kAllowUnvalidated, "allow_unvalidated"},
    {Reason::kStoppedByTimeLimit, "stopped_by_time_limit"},
    {Reason::kBeforeTimeLimitStopped, "before_time_limit_stopped"},
    {Reason::kRaiseMaxError, "raise_max_error"},
    {Reason::kRaiseTimeLimitOrMaxError, "raise_time_limit_or_max_error"},
    {Reason::kRaiseTierBudget, "raise_tier_budget"},
    {Reason::kTierBudgetsTogether, "tier_budgets_together"},
    {Reason::kTargetDeviceGiven, "target_device_given"},
    {Reason::kCpuBackendGiven, "cpu_backend_given"},
    {Reason::kUseTargetDevice, "use_target_device"},
    {Reason::kWithinTimeLimit, "within_time_limit"},
    {Reason::kVocabRemapExport, "vocab_remap_export"},
    {Reason::kWrittenByExport, "written_by_export"},
    {Reason::kBenchStorage, "bench_storage"},
    {Reason::kSaveStorageProfile, "save_storage_profile"},
    {Reason::kBenchBackend, "bench_backend"},
    {Reason::kSaveDeviceProfile, "save_device_profile"},
    {Reason::kBenchJson, "bench_json"},
    {Reason::kUnknownTargetDevice, "unknown_target_device"},
}};

std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\t') out += "\\t";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::optional<std::string> unescaped(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    if (++i == s.size()) return std::nullopt;
    if (s[i] == '\\') out += '\\';
    else if (s[i] == 't') out += '\t';
    else if (s[i] == 'n') out += '\n';
    else return std::nullopt;
  }
  return out;
}

template <class T>
bool parse_number(std::string_view s, T& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

// One stored line: its seven fields, no more and no fewer.
std::optional<TuneReason> decode_one(std::string_view line) {
  std::vector<std::string_view> f;
  for (size_t start = 0;;) {
    const size_t tab = line.find('\t', start);
    f.push_back(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
    if (tab == std::string_view::npos) break;
    start = tab + 1;
  }
  if (f.size() != 7) return std::nullopt;
  TuneReason r;
  bool known = false;
  for (const auto& [code, word] : kCodeWords)
    if (word == f[0]) r.code = code, known = true;
  const std::optional<std::string> name = unescaped(f[2]), detail = unescaped(f[3]);
  if (!known || !name || !detail) return std::nullopt;
  if (!parse_number(f[1], r.value)) return std::nullopt;
  if (!parse_number(f[4], r.line) || !parse_number(f[5], r.at) || !parse_number(f[6], r.length)) return std::nullopt;
  r.name = *name;
  r.detail = *detail;
  return r;
}

}  // namespace

std::string reason_figure(double value) {
  char b[32];
  const auto [end, ec] = std::to_chars(b, b + sizeof b, value, std::chars_format::general, 6);
  return std::string(b, ec == std::errc() ? end : b);
}

const ReasonWords& command_words() {
  static const CommandWords words;
  return words;
}

void say(std::string& text, std::vector<TuneReason>& reasons, TuneReason reason) {
  const std::string words = command_words().say(reason);
  reason.at = static_cast<uint32_t>(text.size());
  reason.length = static_cast<uint32_t>(words.size());
  text += words;
  reasons.push_back(std::move(reason));
}

std::string in_words(const std::string& text, const std::vector<TuneReason>& reasons, const ReasonWords& words, uint32_t line) {
  std::string out;
  size_t from = 0;  // the text up to here is in `out`
  for (const TuneReason& r : reasons) {
    // Marks are in the order they were made (left to right); one out of place is skipped.
    if (r.line != line || r.at < from || size_t{r.at} + r.length > text.size()) continue;
    if (text.compare(r.at, r.length, command_words().say(r)) != 0) continue;
    out.append(text, from, r.at - from);
    out += words.say(r);
    from = size_t{r.at} + r.length;
  }
  return out.append(text, from, std::string::npos);
}

std::vector<TuneReason> shifted(const std::vector<TuneReason>& from, uint32_t by, uint32_t line) {
  std::vector<TuneReason> out = from;
  for (TuneReason& r : out) {
    r.at += by;
    r.line = line;
  }
  return out;
}

std::string encode_reasons(const std::vector<TuneReason>& reasons) {
  std::string out;
  for (const TuneReason& r : reasons) {
    std::string_view word;
    for (const auto& [code, w] : kCodeWords)
      if (code == r.code) word = w;
    if (!out.empty()) out += '\n';
    out += std::string(word) + '\t' + figure_exact(r.value) + '\t' + escaped(r.name) + '\t' +
           escaped(r.detail) + '\t' + std::to_string(r.line) + '\t' + std::to_string(r.at) + '\t' + std::to_string(r.length);
  }
  return out;
}

std::optional<std::vector<TuneReason>> decode_reasons(std::string_view stored) {
  std::vector<TuneReason> out;
  while (!stored.empty()) {
    const size_t nl = stored.find('\n');
    const std::optional<TuneReason> r = decode_one(stored.substr(0, nl));
    if (!r) return std::nullopt;
    out.push_back(*r);
    stored = nl == std::string_view::npos ? std::string_view() : stored.substr(nl + 1);
  }
  return out;
}

}  // namespace edo::model
