// The Tuner view's chart: whole plans' device bytes against step time (the Pareto frontier of
// the measured candidates), the baseline and the chosen plan marked, the budget as a line.
#pragma once

#include <QChart>

#include "edo/model/tune.h"

namespace edo::gui {

QChart* make_pareto_chart(const model::TuneResult& result);

}  // namespace edo::gui
