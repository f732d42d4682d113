// The four charts of a table's detail: rank-frequency with the Zipf fit (log-log), the
// coverage curve, the LRU hit rate against cache size (rows below, bytes above) and the
// hot-set drift between windows.
#pragma once

#include <QChart>

#include "edo/gui/tables/table_detail.h"

namespace edo::gui {

QChart* make_rank_frequency_chart(const TableDetail& d);
QChart* make_coverage_chart(const TableDetail& d);
QChart* make_lru_chart(const TableDetail& d);
QChart* make_drift_chart(const TableDetail& d);

}  // namespace edo::gui
