// One opened recording as the dashboard holds it: the profile, its table views (the numbers
// `edo report --json` prints) and the chart data derived from them. Immutable once built and
// shared between the loader's thread and the views.
#pragma once

#include <QString>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "edo/db/profile_store.h"
#include "edo/gui/recording/memory_timeline.h"
#include "edo/model/profile.h"
#include "edo/model/profile_summary.h"
#include "edo/model/rank_view.h"
#include "edo/model/tune.h"
#include "edo/tuner/plan_io.h"

namespace edo::gui {

// Facts written once on one thread and read on another: get() is nullptr until fill(), and
// stays so after fail(why), when error() says why (one line).
class TorchRecFactsSlot {
 public:
  using Facts = std::map<std::string, tuner::TorchRecFacts>;
  void fill(Facts facts) {
    facts_ = std::move(facts);
    state_.store(kFilled, std::memory_order_release);
  }
  void fail(std::string why) {
    error_ = std::move(why);
    state_.store(kFailed, std::memory_order_release);
  }
  const Facts* get() const { return state_.load(std::memory_order_acquire) == kFilled ? &facts_ : nullptr; }
  const std::string* error() const { return state_.load(std::memory_order_acquire) == kFailed ? &error_ : nullptr; }

 private:
  enum State { kPending, kFilled, kFailed };
  std::atomic<State> state_{kPending};
  Facts facts_;
  std::string error_;
};

struct Recording {
  QString path;
  // The whole profile. Once `tables` hold the statistics, the tables' own aggregates are
  // dropped here (the views hold the merged copies; keeping both doubles the memory).
  model::Profile profile;
  std::vector<model::TableView> tables;   // model::table_views(profile)
  // False while only the outline is loaded: table shapes, bytes and lookups are known, the
  // other statistics (unique rows, coverage, Zipf fit, LRU and drift curves) are not.
  bool has_statistics = false;
  std::vector<StackedTimeline> timelines;  // sessions with a device memory timeline
  // profile.peak_bytes() and profile.table_memory(), computed with the rest off the UI thread
  // (the peak sorts every memory event).
  int64_t peak_bytes = 0;
  model::TableMemory table_memory;
  // Every rank of a distributed job side by side (model::rank_views(), before the tables'
  // aggregates are dropped); empty when the job had no RANK.
  std::vector<model::RankView> ranks;
  // The latest `edo tune` run stored in the file, with its latest plan; none when never tuned.
  std::optional<model::TuneResult> tune;
  // Which view each of profile.tables went into (model::table_views()' view_of_table).
  std::vector<std::string> view_of_table;
  // What the recording knows for the TorchRec export (recording_torchrec_facts.h): filled once,
  // by the loader's worker after the statistics are delivered (the held-out replays take
  // longer than the statistics themselves), so that the export reads no file.
  std::shared_ptr<TorchRecFactsSlot> torchrec_facts = std::make_shared<TorchRecFactsSlot>();

  const model::TableView* find_table(const std::string& name) const;
  const model::Session* session(int64_t id) const;
  uint64_t total_lookups() const;
};
using RecordingPtr = std::shared_ptr<const Recording>;

// Stage 1 (fast): the outline of the file. The tables come from model::table_views() on the
// outline with each view's lookups filled in from the stored counts.
std::shared_ptr<Recording> make_outline(const QString& path, db::ProfileStore::Outline outline,
                                        std::optional<model::TuneResult> tune = std::nullopt);
// Stage 2: the full recording, without its TorchRec facts (stage 3: fill_torchrec_facts()).
// on_progress(done, total) counts summarised table views; it may throw to abandon the work.
std::shared_ptr<Recording> make_recording(const QString& path, model::Profile profile,
                                          const std::function<void(size_t, size_t)>& on_progress = {},
                                          std::optional<model::TuneResult> tune = std::nullopt);
// The profile as the dashboard reads it: ProfileStore::load_for_viewing, plus the ordered sample
// of each token table (a table the hooks noted an LM head for), which its vocabulary coverage is
// fitted on (edo/tuner/vocab_coverage.h), as `edo report` does.
model::Profile load_profile_for_dashboard(const db::ProfileStore& store,
                                          const std::function<void(size_t, size_t)>& on_table = {});
// All three stages in a row, on the calling thread (tools and tests). Throws db::DbError.
std::shared_ptr<Recording> load_recording(const QString& path);

}  // namespace edo::gui
