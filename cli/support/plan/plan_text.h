// The tuner's plan as text (`edo tune`, `edo report`): the machine, what was measured, the
// savings and time change, and each table's choice and why. Names are terminal-safe.
#pragma once

#include <string>

#include "edo/model/tune.h"

namespace edo::cli {

std::string plan_text(const model::TuneResult& result);

}  // namespace edo::cli
