// The recorder behind `edo record`: listens on a Unix socket, starts the job through a
// JobLauncher (job_launcher.h; a fake one in the unit tests), collects the frames of every
// traced process, keeps the .edodb up to date while the job runs (saved every `save_every`,
// and at the end, so that a killed job leaves what was flushed; a failed save is retried and
// never stops the job), and passes the signals edo gets on to the job after asking every
// traced process for a flush. The command line (cli/cmd_record.cpp) parses the arguments,
// builds the job's environment, and prints.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "edo/collector/collector.h"
#include "edo/collector/job_launcher.h"
#include "edo/model/profile.h"

namespace edo::collector {

struct RecordSettings {
  // The .edodb, written at the end (the caller has checked it may be): until then the recording
  // goes to db::recording_file_for(output, edo's pid), renamed over `output` by the final save.
  std::string output;
  bool replace_existing = false;  // --force: an edo database at `output` is replaced (by the rename)
  // The job. Its environment lacks EDO_CHANNEL: the recorder adds its socket's path.
  JobCommand job;
  std::map<std::string, std::string> metadata;  // into the profile (edo_version, recorded_command)
  std::chrono::milliseconds save_every{2000};   // periodic save, and the retry of a failed one
  std::chrono::milliseconds flush_wait{5000};   // the most a signal waits for the flush replies
  std::chrono::milliseconds drain_grace{2000};  // processes that outlive the job, after it ended
  // SIGINT, SIGTERM, SIGHUP, SIGQUIT handlers that call note_signal_for_job() (the command line);
  // unit tests call note_signal_for_job() themselves.
  bool install_signal_handlers = true;
  // Known before the job starts: why it cannot be traced (a 32-bit program). Said at the end,
  // when no process connected, instead of the usual guesses.
  std::string untraced_reason;
};

struct RecordOutcome {
  int code = 0;                    // the job's exit code (128+signal when it was killed)
  bool final_save_failed = false;  // the file holds the recording up to `unsaved_s` before the end
  double unsaved_s = 0;
  std::string written;  // where the recording is: the output, or the recording file when it could not be renamed
  bool placed = false;  // written == output
  // A save failed (save_error: why, without the file's name): how much the file holds of what
  // edo received (lookups, and the job's seconds: saved_s of job_s).
  std::string save_error;
  uint64_t saved_lookups = 0, received_lookups = 0;
  double saved_s = 0, job_s = 0;
  // No save got through, not even the first: no file is left (written is empty).
  bool nothing_saved = false;
};

class Recorder {
 public:
  // One line for the user (edo record: stderr, prefixed "edo record: ").
  using Say = std::function<void(const std::string&)>;
  Recorder(JobLauncher& launcher, Say say);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Runs the job to its end and writes the database. Throws (one line) when the socket or the
  // database cannot be created, or the job cannot be started; nothing of the job runs then.
  RecordOutcome run(const RecordSettings& s);
  // What was recorded (after run()).
  const model::Profile& profile() const;

 private:
  JobLauncher& launcher_;
  Say say_;
  std::unique_ptr<ProfileBuilder> builder_;
};

// What a handler of a signal meant for the job does (async-signal-safe): the running
// recorder asks the traced processes for a flush and passes it on once. The same signal
// noted again before it was passed on is passed on once (the kernel keeps one pending
// instance of a signal too).
void note_signal_for_job(int sig);

}  // namespace edo::collector
