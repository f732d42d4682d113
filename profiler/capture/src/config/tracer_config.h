// Config glue: what the EDO_* settings (config.h) mean for the parts of the library.
#pragma once

#include "edo/capture/config.h"
#include "edo/stats/table_stats.h"
#include "edo/wire/wire.h"
#include "session.h"
#include "sink.h"

namespace edo::capture {

stats::StatsConfig stats_config_of(const Config& c);
SinkTarget sink_target_of(const Config& c);
// The Hello frame of a session: who the process is and the settings in force (`async`: the
// EDO_ASYNC in effect, off when no background thread could be started).
wire::Hello make_hello(const Config& c, bool async, const SessionIdentity& id);

}  // namespace edo::capture
