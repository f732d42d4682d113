// The saves of one recording while `edo record` runs (issue 30 §4-5): periodic saves of what
// the collector has built, each saying whether the recording is whole (db/recording_state.h),
// and what happens when one fails (disk full, file size limit): the job never stops, one line
// says so the first time, later saves retry, and a few bytes in the file say why and how much
// edo received, written into disk space held back for them.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "edo/collector/collector.h"
#include "edo/collector/recorder.h"

namespace edo::db {
class ProfileStore;
}

namespace edo::collector {

class SpaceReserve;

class RecordingSaves {
 public:
  using clock = std::chrono::steady_clock;
  // `recording`: the file `store` writes; `retry_s`: the time between saves (said in the line
  // of a failed save); `job_start_unix_ns`: stored in every save.
  RecordingSaves(db::ProfileStore& store, std::string recording, ProfileBuilder& builder, Recorder::Say say,
                 double retry_s, int64_t job_start_unix_ns);
  ~RecordingSaves();
  RecordingSaves(const RecordingSaves&) = delete;
  RecordingSaves& operator=(const RecordingSaves&) = delete;

  // The first save (the file says "in progress" from the start), then the space held back.
  void first();
  // A save: `final_save` marks the recording complete. Never throws.
  void save(bool final_save);
  // The job's end (unix ns): what a failed final save says edo received until.
  void set_job_end(int64_t unix_ns) { job_end_unix_ns_ = std::to_string(unix_ns); }

  bool saved_once() const { return saved_once_; }
  bool final_save_failed() const { return final_save_failed_; }
  clock::time_point last_good_save() const { return last_good_save_; }
  const std::string& last_error() const { return last_error_; }
  uint64_t saved_lookups() const { return saved_lookups_; }
  uint64_t received_lookups() const;

 private:
  void note_failure(const std::exception& e, bool final_save);

  db::ProfileStore& store_;
  const std::string recording_;
  ProfileBuilder& builder_;
  Recorder::Say say_;
  const double retry_s_;
  const int64_t job_start_unix_ns_;
  std::string host_;
  std::unique_ptr<SpaceReserve> reserve_;  // taken after the first save (it must not take that one's space)
  uint64_t saved_gen_ = 0;
  bool saved_once_ = false, failed_ = false, final_save_failed_ = false;
  clock::time_point last_good_save_ = clock::now();
  uint64_t saved_lookups_ = 0;
  std::string last_error_;
  std::string job_end_unix_ns_;  // set once the job ended
};

}  // namespace edo::collector
