// The Tuner view's words for the tuner's reasons (edo/model/tune_reasons.h): where `edo tune`
// names a flag ("over --max-error 0.02"), the dashboard names the field that sets the same
// option ("over the Max error 0.02"), and advice that only the command line can follow says what
// to do without a flag.
#pragma once

#include <QString>

#include <exception>
#include <string>
#include <vector>

#include "edo/model/tune_reasons.h"

namespace edo::gui {

// The words themselves.
const model::ReasonWords& dashboard_words();

// A text of a tune result (a note, a choice's why, an error) with the reasons marked in it in
// the dashboard's words; `line`: which of a run's notes it is. A text with none marked (a run
// stored before reasons were) reads as stored.
QString dashboard_text(const std::string& text, const std::vector<model::TuneReason>& reasons, uint32_t line = 0);

// An error's message in the dashboard's words: the reasons a tuner::TuneError or
// TuneArgumentError marks in it worded (any other error's message as it is).
QString dashboard_error(const std::exception& error);

}  // namespace edo::gui
