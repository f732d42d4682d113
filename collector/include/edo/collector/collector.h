// The collector side of the tracer: decode wire frames (one stream per connection or file)
// into an edo::model::Profile, and the Unix-socket server `edo record` listens on.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "edo/model/profile.h"
#include "edo/wire/wire.h"

namespace edo::collector {

struct DecodeIssue {
  std::string stream;  // file name or "connection N (pid P)"
  uint64_t offset = 0; // byte offset in that stream
  std::string message;
};

// The process at the other end of a connection (ProfileBuilder::open_stream).
struct StreamPeer {
  int64_t pid = 0;      // 0: not known (a file)
  int64_t ppid = 0;     // its parent when it connected (0 when it was gone already)
  std::string command;  // its command line when it connected ("" when it was gone already)
  std::string host;
};

class ProfileBuilder {
 public:
  explicit ProfileBuilder(std::string source);  // model::Session::source: "record" or "import"
  ~ProfileBuilder();
  ProfileBuilder(const ProfileBuilder&) = delete;
  ProfileBuilder& operator=(const ProfileBuilder&) = delete;

  // `peer` (a connection to edo record): the process that connected, by its credentials. A
  // stream that ends before its first frame still gets a session for it (below).
  using Peer = StreamPeer;
  int open_stream(std::string label, Peer peer = {});
  void feed(int stream, const void* data, size_t n);
  // `peer_runs_on`: the connected process was still running (not exiting) when its connection
  // closed: a session without its Goodbye gets connection_lost, not ended_without_final_flush.
  // Asked only for such a session (looking costs the collector up to 50 ms: ChannelServer).
  void close_stream(int stream, const std::function<bool()>& peer_runs_on);
  // End of stream: a partial frame at the tail is reported as a truncation issue, and a
  // session that had not said goodbye gets the ended_without_final_flush counter. A connection
  // that ends before its process's first flush arrived (it died, or was killed, within ~1 flush
  // interval of loading the tracer; issue 30 §6) gets a session of its own for the peer's pid,
  // marked ended_without_final_flush: the loss is recorded, never a process missing.
  void close_stream(int stream);
  // Closes every stream still open (the recording ends while some process still runs).
  void close_all_streams();

  // Applies only the sessions whose Hello names this run (wire::Hello::run_id); the frames of
  // other sessions are decoded and ignored (`edo import --run`).
  void keep_only_run(std::string run_id) { only_run_ = std::move(run_id); }
  uint64_t skipped_sessions() const { return skipped_sessions_; }

  // Sets the exit code on the sessions of `pid` that have none (the last one gets it).
  void set_exit_code(int64_t pid, int code);
  // Attributes memory events to tables by address range and returns the profile.
  model::Profile& finish();
  model::Profile& profile() { return profile_; }

  const std::vector<DecodeIssue>& issues() const { return issues_; }
  uint64_t frames() const { return frames_; }
  uint64_t generation() const { return generation_; }  // bumps on every applied frame
  size_t open_streams() const;
  // Flushes done at the collector's request so far (wire::kFlushReplyNote).
  uint64_t flush_replies() const { return flush_replies_; }

 private:
  struct Stream;
  void drain(Stream& s);  // applies every message the stream's decoder has ready
  void apply(Stream& s, wire::Message& m, uint64_t offset);
  void on(Stream& s, wire::Hello& v, uint64_t offset);
  void on(Stream& s, wire::TableReg& v, uint64_t offset);
  void on(Stream& s, wire::Tie& v, uint64_t offset);
  void on(Stream& s, wire::TableDelta& v, uint64_t offset);
  void on(Stream& s, wire::ExtraBytes& v, uint64_t offset);
  void on(Stream& s, wire::Steps& v, uint64_t offset);
  void on(Stream& s, wire::MemoryEvents& v, uint64_t offset);
  void on(Stream& s, wire::KernelStats& v, uint64_t offset);
  void on(Stream& s, wire::RangeStats& v, uint64_t offset);
  void on(Stream& s, wire::Dropped& v, uint64_t offset);
  void on(Stream& s, wire::Note& v, uint64_t offset);
  void on(Stream& s, wire::WeightRows& v, uint64_t offset);
  void on(Stream& s, wire::Goodbye& v, uint64_t offset);
  void apply_weight_rows(Stream& s, wire::WeightRows& v, uint64_t offset);
  // The PyTorch hooks' training facts (pytorch.loss, pytorch.optimizer, pytorch.dense_use;
  // pytorch_notes.cpp): into the session's and its tables' fields. Returns false for any other
  // key (kept as metadata).
  bool apply_training_note(const std::string& stream, model::Session& ses, const wire::Note& v, uint64_t offset);
  // A table being registered gets the facts noted for it before its registration arrived.
  void take_pending_facts(model::Table& t);
  // A malformed training note: the first of its key in a stream is an issue, later ones count in it.
  void malformed_note(const std::string& stream, const std::string& key, uint64_t offset, const std::string& why);
  model::Session* session(Stream& s);
  void end_session(Stream& s, const std::function<bool()>& peer_runs_on = {});
  void attribute();

  std::string source_;
  model::Profile profile_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<DecodeIssue> issues_;
  uint64_t frames_ = 0;
  uint64_t generation_ = 0;
  int64_t next_session_id_ = 1;
  uint64_t flush_replies_ = 0;
  std::set<int64_t> said_goodbye_;  // sessions (ids) whose Goodbye arrived
  // Per table (index in profile_.tables): when its rows were first read, delta by delta.
  std::map<size_t, model::FirstSeenTracker> first_seen_;
  std::optional<std::string> only_run_;
  // Optimizer / dense-use facts for a table the session has not registered (yet): applied when
  // its registration frame arrives. (session id, table name) -> the facts.
  struct PendingFacts {
    std::optional<model::OptimizerParams> optimizer;
    std::optional<std::string> dense_use;
  };
  std::map<std::pair<int64_t, std::string>, PendingFacts> pending_facts_;
  // (stream label, note key) -> (index into issues_, malformed notes so far)
  std::map<std::pair<std::string, std::string>, std::pair<size_t, uint64_t>> malformed_;
  uint64_t skipped_sessions_ = 0;
};

// Summary lines printed by `edo record` / `edo import` (sessions/tables/lookups, peak memory,
// dropped events, and weight snapshots when there are any or `weights_asked`: how many tables
// have one, naming a few that do not).
std::vector<std::string> summary_lines(const model::Profile& p, bool weights_asked = false);

// Unix-domain stream socket in a private temporary directory; every traced process connects
// once (one stream, one or more sessions).
class ChannelServer {
 public:
  ChannelServer();   // throws std::runtime_error with a one-line message
  ~ChannelServer();  // removes the socket and its directory
  const std::string& path() const { return path_; }
  // Accepts connections and feeds whatever arrives within `timeout_ms` into `b`.
  // Returns true if any byte or connection event was handled.
  bool poll_once(ProfileBuilder& b, int timeout_ms);
  size_t connections() const { return conns_.size(); }
  // Accepts every connection already waiting (a process that connected, wrote its frames
  // and exited before it was accepted). Call it before stop_listening().
  void accept_pending(ProfileBuilder& b);
  // Closes the listening socket (no new connections; any still waiting are dropped).
  void stop_listening();
  // Asks every connected process for a flush now (one byte; the tracer's background thread
  // answers within ~20 ms with a flush ending in wire::kFlushReplyNote). Returns how many
  // were asked. Never blocks.
  size_t request_flush();

 private:
  struct Conn {
    int fd;
    int stream;
    int64_t pid;  // the peer, 0 when unknown
  };
  std::string dir_, path_;
  int listen_fd_ = -1;
  std::vector<Conn> conns_;
  int accepted_ = 0;
};

}  // namespace edo::collector
