// The TorchRec facts of a recording's tables (edo/tuner/torchrec_facts.h: config names,
// features, pooling, miss curves), computed once when the dashboard loads the recording, on the
// loader's worker after the statistics (stage 3): its TorchRec export then writes what
// `edo export --format torchrec` writes without opening the file again.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "edo/db/profile_store.h"
#include "edo/gui/recording/recording.h"
#include "edo/model/profile.h"
#include "edo/model/profile_summary.h"
#include "edo/tuner/plan_io.h"

namespace edo::gui {

// The facts of `views` (model::table_views(profile) with its view_of_table), as
// tuner::torchrec_facts() computes them from the whole profile. The dashboard loads a recording
// without ordered samples (ProfileStore::load_for_viewing), but the held-out miss curves are
// replayed from them: with `store`, each view's tables' statistics are decoded again from the
// file and merged as table_views() merged them, one view at a time (one view's samples in
// memory at once, freed after; the views keep theirs undecoded). Without `store`, the views'
// own aggregates.
// on_view(done, total) after each view; it may throw to abandon the work.
std::map<std::string, tuner::TorchRecFacts> torchrec_facts_of_views(const model::Profile& profile,
                                                                     const std::vector<model::TableView>& views,
                                                                     const std::vector<std::string>& view_of_table,
                                                                     const db::ProfileStore* store,
                                                                     const std::function<void(size_t, size_t)>& on_view = {});

// Fills rec.torchrec_facts with torchrec_facts_of_views() of its views; `store`: the file it
// was loaded from (nullptr: the views' own aggregates). on_view as there.
void fill_torchrec_facts(const Recording& rec, const db::ProfileStore* store, const std::function<void(size_t, size_t)>& on_view = {});

}  // namespace edo::gui
