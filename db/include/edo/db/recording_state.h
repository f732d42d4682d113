// Whether a recording is whole (issue 30 §10). `edo record` writes into a file of its own beside
// the output (recording_file_for()) and renames it over the output at its final save; from its
// first save the file says "in progress" (metadata below), and the final save says "complete".
// A file that still says "in progress" once its writer is gone was cut short (edo killed, the
// final save failed): "incomplete". Files without these keys (older edo, edo import, edo synth,
// edo merge) are complete.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edo/model/profile.h"

namespace edo::db {

// Metadata keys `edo record` writes at every save.
inline constexpr const char* kRecordingState = "recording.state";          // in_progress | complete
inline constexpr const char* kRecordingWriterPid = "recording.writer_pid";   // edo record's pid
inline constexpr const char* kRecordingWriterHost = "recording.writer_host";
inline constexpr const char* kRecordingStartedNs = "recording.started_unix_ns";  // the job's start
inline constexpr const char* kRecordingSavedNs = "recording.saved_unix_ns";      // the latest save
// Written by `edo record` when a save fails (disk full, file size limit, I/O error), in a small
// metadata-only write that may still get through when the whole save did not (issue 30 §5): why,
// and how much edo record had received by then, so that every reader says how much is missing.
// "failed" once the final save failed: incomplete whatever the writer's pid says.
inline constexpr const char* kRecordingSaveError = "recording.save_error";          // the error, one line
inline constexpr const char* kRecordingReceivedNs = "recording.received_unix_ns";   // when that was
inline constexpr const char* kRecordingReceivedLookups = "recording.received_lookups";  // lookups edo record had
inline constexpr const char* kRecordingSavedLookups = "recording.saved_lookups";    // lookups in the latest save
inline constexpr const char* kRecordingFinalSave = "recording.final_save";          // "failed"

struct RecordingState {
  enum class Kind { kComplete, kInProgress, kIncomplete };
  Kind kind = Kind::kComplete;
  int64_t started_unix_ns = 0;
  int64_t saved_unix_ns = 0;
  int64_t writer_pid = 0;
  std::string writer_host;
  bool writer_elsewhere = false;  // in progress as far as can be told: its writer is on another host
  // A save that failed (kRecordingSaveError...): why, and what edo record had received then,
  // beside what the file holds (the lookups of its tables, as of its latest save).
  std::string save_error;
  int64_t received_unix_ns = 0;
  uint64_t received_lookups = 0;
  uint64_t held_lookups = 0;
  int64_t received_duration_ns() const {
    return received_unix_ns > started_unix_ns && started_unix_ns > 0 ? received_unix_ns - started_unix_ns : 0;
  }
  // What the file holds of the job's time: latest save - start (0 when unknown).
  int64_t saved_duration_ns() const { return saved_unix_ns > started_unix_ns && started_unix_ns > 0 ? saved_unix_ns - started_unix_ns : 0; }
  bool whole() const { return kind == Kind::kComplete; }
  // "complete", "recording in progress", "incomplete".
  std::string word() const;
  // One line for a reader: "recording in progress (edo record pid 123 is still writing it; 12.3 s
  // saved so far)" or "incomplete: the recording was cut short (...)", or, when a save failed,
  // "incomplete: edo record could not save the recording (the disk is full ...); the file holds
  // 0.0 s of the job's 4.2 s and 0 of the 700000 lookups edo record received"; "" when complete.
  std::string describe() const;
};

// The state of a loaded recording. "In progress" needs the writer alive on this host (a process
// of that pid named edo); a writer on another host cannot be asked, and its file reads as in
// progress there.
RecordingState recording_state(const model::Profile& profile);

// The file `edo record` (process `pid`) writes while the job runs, for the output `output`:
// ".NAME.edo-recording-PID" in the output's folder.
std::string recording_file_for(const std::string& output, int64_t pid);
// Such files present for `output` (any pid), sorted.
std::vector<std::string> recording_files_for(const std::string& output);

}  // namespace edo::db
