// The overview's memory chart: the device memory timeline of one process stacked by table
// with its peak marked, or, for a recording without a CUDA timeline, the tables' bytes as
// one stacked bar, titled so.
#pragma once

#include <QChart>

#include "edo/gui/recording/recording.h"

namespace edo::gui {

QChart* make_timeline_chart(const StackedTimeline& timeline, const QString& session_label);
QChart* make_table_bytes_chart(const Recording& recording);

}  // namespace edo::gui
