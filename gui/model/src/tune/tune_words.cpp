// The Tuner view's words for the tuner's reasons (tune_words.h). The fields named are the
// form's (gui/views/tuner_view.cpp makeForm): Budget, Max error, Backend, Target, Time limit.
#include "edo/gui/tune/tune_words.h"

#include <cmath>

#include "edo/tuner/tuner.h"

namespace edo::gui {

namespace {

class DashboardWords final : public model::ReasonWords {
 public:
  std::string say(const model::TuneReason& r) const override {
    using model::Reason;
    switch (r.code) {
      case Reason::kRecordWeights:
        return "record the job again with its weights (the weights option of edo record) for errors on the job's own weights";
      case Reason::kChangeMaxError: return "change it in the Max error field ('none' for no limit)";
      case Reason::kLargerTimeLimit: return "a larger Time limit " + r.name;
      case Reason::kLargerMaxError: return "a larger Max error " + r.name;
      case Reason::kOverMaxError: return "over the Max error " + model::reason_figure(r.value);
      case Reason::kLowerMeasureBytes: return "";  // the dashboard has no such field: nothing to advise
      case Reason::kOutsideTables: return "outside the tables tuned or not encodable";
      case Reason::kUseCpuBackend: return "choose Backend cpu (or auto) on this machine";
      case Reason::kNoTableMatches: return "no table matches '" + r.name + "' (tables: " + r.detail + ")";
      case Reason::kTakenUnvalidated: return "taken because unvalidated candidates were allowed";
      case Reason::kAllowUnvalidated: return "edo tune can allow them";
      case Reason::kStoppedByTimeLimit:
        return "stopped by the Time limit" + (std::isfinite(r.value) ? " " + model::reason_figure(r.value) + " s" : std::string());
      case Reason::kBeforeTimeLimitStopped: return "before the Time limit stopped the run";
      case Reason::kRaiseMaxError: return "raise the Max error";
      case Reason::kRaiseTimeLimitOrMaxError: return "raise the Time limit or the Max error";
      case Reason::kRaiseTierBudget: return "raise the " + r.name + " budget (an option of edo tune)";
      case Reason::kTierBudgetsTogether:
        return "no choice of the tables' options meets the Budget and the host and SSD budgets together (raise one)";
      case Reason::kTargetDeviceGiven: return "the Target chosen";
      case Reason::kCpuBackendGiven: return " (Backend cpu)";
      case Reason::kUseTargetDevice: return "a GPU chosen as Target models its times instead (stored: " + r.detail + ")";
      case Reason::kWithinTimeLimit: return r.name + " within the Time limit";
      case Reason::kVocabRemapExport: return "the id remap is edo export's vocab-remap format at coverage " + r.name;
      case Reason::kWrittenByExport: return "the dashboard's " + r.name + " export (edo export's " + r.name + " format)";
      case Reason::kBenchStorage: return "edo bench's storage benchmark";
      case Reason::kSaveStorageProfile: return "edo bench's storage benchmark, saved as a device, measures them";
      case Reason::kBenchBackend: return "edo bench on the " + r.name + " backend";
      case Reason::kSaveDeviceProfile: return "edo bench on that GPU, saved as a device, writes one";
      case Reason::kBenchJson: return "edo bench's JSON output";
      case Reason::kUnknownTargetDevice:
        return "the Target '" + r.name + "' is neither a stored device (" + r.detail +
               ") nor an edo.device/1 or edo.bench/1 JSON file; pick a stored one, or run edo bench on that GPU and save "
               "it as a device";
    }
    return {};
  }
};

}  // namespace

const model::ReasonWords& dashboard_words() {
  static const DashboardWords words;
  return words;
}

QString dashboard_text(const std::string& text, const std::vector<model::TuneReason>& reasons, uint32_t line) {
  return QString::fromStdString(model::in_words(text, reasons, dashboard_words(), line));
}

QString dashboard_error(const std::exception& error) {
  if (const auto* e = dynamic_cast<const tuner::TuneError*>(&error)) return dashboard_text(e->what(), e->reasons);
  if (const auto* e = dynamic_cast<const tuner::TuneArgumentError*>(&error)) return dashboard_text(e->what(), e->reasons);
  return QString::fromStdString(error.what());
}

}  // namespace edo::gui
