#include "recording_saves.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <vector>

#include "edo/db/profile_store.h"
#include "edo/db/recording_state.h"

namespace edo::collector {

// A little disk space held back for the note that says why a save failed (issue 30 §5): a full
// disk has no room left for even the few bytes of that note, so this space is given back right
// before it is written. An unlinked file held open: the space is the kernel's to free when edo
// ends, however it ends, and no file is left in the user's folder.
class SpaceReserve {
 public:
  static constexpr size_t kBytes = 16 * 1024;  // a few pages of the log: the note needs one
  explicit SpaceReserve(const std::string& beside) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(beside).parent_path().empty() ? fs::path(".") : fs::path(beside).parent_path();
    fd_ = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ < 0) {  // a file system without O_TMPFILE: a named file, unlinked at once
      const std::string named = beside + ".reserve";
      fd_ = ::open(named.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
      if (fd_ >= 0) ::unlink(named.c_str());
    }
    if (fd_ < 0) return;
    // As much of it as there is room for (on a nearly full disk, what is left: one page of the
    // log is what the note needs).
    const std::vector<char> page(4096, 0);
    size_t held = 0;
    while (held < kBytes && ::write(fd_, page.data(), page.size()) == ssize_t(page.size())) held += page.size();
    if (held == 0) release();
  }
  ~SpaceReserve() { release(); }
  SpaceReserve(const SpaceReserve&) = delete;
  SpaceReserve& operator=(const SpaceReserve&) = delete;
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};


namespace {
std::string now_unix_ns() {
  return std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count());
}
}  // namespace

RecordingSaves::RecordingSaves(db::ProfileStore& store, std::string recording, ProfileBuilder& builder,
                               Recorder::Say say, double retry_s, int64_t job_start_unix_ns)
    : store_(store),
      recording_(std::move(recording)),
      builder_(builder),
      say_(std::move(say)),
      retry_s_(retry_s),
      job_start_unix_ns_(job_start_unix_ns) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  host_ = host;
}

RecordingSaves::~RecordingSaves() = default;

uint64_t RecordingSaves::received_lookups() const {
  uint64_t n = 0;
  for (const auto& t : builder_.profile().tables) n += t.aggregate.lookups();
  return n;
}

void RecordingSaves::first() {
  save(false);
  if (saved_once_) reserve_ = std::make_unique<SpaceReserve>(recording_);
}

void RecordingSaves::save(bool final_save) {
  try {
    if (!final_save && saved_once_ && builder_.generation() == saved_gen_) {
      store_.save_metadata({{db::kRecordingSavedNs, now_unix_ns()}});  // nothing new: still running
      last_good_save_ = clock::now();
      return;
    }
    auto& meta = builder_.profile().metadata;
    meta[db::kRecordingState] = final_save ? "complete" : "in_progress";
    meta[db::kRecordingWriterPid] = std::to_string(getpid());
    meta[db::kRecordingWriterHost] = host_;
    meta[db::kRecordingStartedNs] = std::to_string(job_start_unix_ns_);
    meta[db::kRecordingSavedNs] = now_unix_ns();
    const uint64_t lookups = received_lookups();
    meta[db::kRecordingSavedLookups] = std::to_string(lookups);
    // A save that works after failed ones holds everything again: the failure noted in the file
    // (save_metadata below) is history, blanked (a save replaces keys, it does not remove them).
    if (failed_)
      for (const char* k : {db::kRecordingSaveError, db::kRecordingReceivedNs, db::kRecordingReceivedLookups}) meta[k] = "";
    store_.save(builder_.finish(), final_save);
    saved_once_ = true;
    saved_gen_ = builder_.generation();
    saved_lookups_ = lookups;
    last_good_save_ = clock::now();
  } catch (const std::exception& e) {
    note_failure(e, final_save);
  }
}

void RecordingSaves::note_failure(const std::exception& e, bool final_save) {
  // "<file>: cannot write: the disk is full (...); free some space" -> what follows the file.
  std::string why = e.what();
  if (const size_t at = why.find(": cannot write: "); at != std::string::npos) why = why.substr(at + 16);
  last_error_ = why;
  if (!failed_) {
    char every[32];
    std::snprintf(every, sizeof every, "%g", retry_s_);
    say_(std::string(e.what()) + "; the job runs on, the file keeps what was saved before, and edo retries every " +
         every + " s");
  }
  failed_ = true;
  final_save_failed_ = final_save;
  // Why, and how much was received: a few bytes, which fit where the whole save did not (the
  // space held back for them on a full disk; a file size limit leaves room below it). Every
  // reader then says what is missing, not only that something is.
  if (!saved_once_) return;
  // Received until now, or, at the final save, until the job ended (what edo record says too).
  std::map<std::string, std::string> note = {{db::kRecordingSaveError, why},
                                             {db::kRecordingReceivedNs, job_end_unix_ns_.empty() ? now_unix_ns() : job_end_unix_ns_},
                                             {db::kRecordingReceivedLookups, std::to_string(received_lookups())}};
  if (final_save) note[db::kRecordingFinalSave] = "failed";
  if (reserve_) reserve_->release();  // the room for this note
  try {
    store_.save_metadata(note);
    // Room again for the next note (the final one says the most), from what is left.
    reserve_ = std::make_unique<SpaceReserve>(recording_);
  } catch (const std::exception&) {
    // Not even that: the file still says "in progress" and reads "incomplete" once edo is gone.
  }
}

}  // namespace edo::collector
