// The recorder without a real job: a fake JobLauncher whose "job" is a thread that connects
// to the recorder's socket as libedo_trace.so does (sink.cpp: one stream per process, 'F' asks
// for a flush, whose frames end with the wire::kFlushReplyNote note), sends wire frames, and
// ends with the exit code it is given (or 128+signal when the recorder passes a signal on).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "edo/collector/recorder.h"
#include "edo/db/profile_store.h"
#include "edo/db/recording_state.h"
#include "edo/model/processes.h"
#include "edo/stats/table_stats.h"
#include "edo/wire/wire.h"

using namespace edo;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kJobPid = 4711;

std::string hello() {
  wire::Hello h;
  h.pid = kJobPid;
  h.ppid = 1;
  h.host = "fake";
  h.command = "fake job";
  return wire::encode(h);
}

std::string table_reg() { return wire::encode(wire::TableReg{0, "emb", 0x1000, 100, 4, 0, 0, -1}); }

// A delta of `n` lookups of row `row`.
std::string delta(int64_t row, size_t n) {
  stats::TableIngestor ing(100, stats::StatsConfig{});
  std::vector<int64_t> idx(n, row);
  ing.add(idx.data(), idx.size());
  return wire::encode(wire::TableDelta{0, ing.take_delta().serialize()});
}

std::string flush_reply() { return wire::encode(wire::Note{wire::kFlushReplyNote, "1"}); }

class FakeJob : public collector::JobLauncher {
 public:
  // What the job's thread does once connected; returns when the job "ends".
  using Body = std::function<void(FakeJob&)>;
  explicit FakeJob(Body body) : body_(std::move(body)) {}
  ~FakeJob() override {
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) close(fd_);
  }

  int64_t start(const collector::JobCommand& cmd) override {
    started_ = cmd;
    std::string channel;
    for (auto& kv : cmd.env)
      if (kv.rfind("EDO_CHANNEL=", 0) == 0) channel = kv.substr(12);
    fd_ = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, channel.c_str(), sizeof addr.sun_path - 1);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("fake: cannot connect");
    thread_ = std::thread([this] {
      body_(*this);
      end(code_.load());
    });
    return kJobPid;
  }
  std::optional<int> poll_exit() override {
    if (!ended_.load()) return std::nullopt;
    return exit_code_.load();
  }
  void signal(int sig) override {
    std::lock_guard<std::mutex> lk(mu_);
    signals_.push_back(sig);
    killed_by_.store(sig);
  }

  // ---- for the body ----
  void send(const std::string& bytes) { ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), ssize_t(bytes.size())); }
  // Waits for the recorder's flush request ('F'); false when the connection closed.
  bool wait_flush_request() {
    char c = 0;
    while (true) {
      const ssize_t n = recv(fd_, &c, 1, 0);
      if (n <= 0) return false;
      if (c == 'F') return true;
    }
  }
  // Waits until the recorder passed a signal on (the job "dies" by it then).
  void wait_killed() {
    while (!killed_by_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    code_.store(128 + killed_by_.load());
  }
  void exit_with(int code) { code_.store(code); }
  std::vector<int> signals() {
    std::lock_guard<std::mutex> lk(mu_);
    return signals_;
  }
  const collector::JobCommand& started() const { return started_; }

 private:
  void end(int code) {
    close(fd_);
    fd_ = -1;
    exit_code_.store(code);
    ended_.store(true);
  }
  Body body_;
  collector::JobCommand started_;
  int fd_ = -1;
  std::thread thread_;
  std::atomic<int> code_{0}, exit_code_{0}, killed_by_{0};
  std::atomic<bool> ended_{false};
  std::mutex mu_;
  std::vector<int> signals_;
};

struct Recorded {
  collector::RecordOutcome outcome;
  std::vector<std::string> said;
  model::Profile saved;
};

collector::RecordSettings settings(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("edo_recorder_" + std::to_string(getpid()));
  fs::create_directories(dir);
  collector::RecordSettings s;
  s.output = (dir / (name + ".edodb")).string();
  fs::remove(s.output);
  s.job.exe = "/fake/job";
  s.job.argv = {"job", "--flag"};
  s.job.env = {"PATH=/usr/bin"};
  s.metadata["recorded_command"] = "job --flag";
  s.install_signal_handlers = false;  // the test notes the signals itself
  return s;
}

Recorded record(FakeJob& job, const collector::RecordSettings& s) {
  Recorded r;
  collector::Recorder rec(job, [&](const std::string& line) { r.said.push_back(line); });
  r.outcome = rec.run(s);
  r.saved = db::ProfileStore(s.output, db::ProfileStore::Mode::kReadOnly).load();
  return r;
}

const model::Table* find_table(const model::Profile& p, const std::string& name) {
  for (auto& t : p.tables)
    if (t.name == name) return &t;
  return nullptr;
}

const model::Session* session_of(const model::Profile& p, int64_t pid) {
  for (auto& s : p.sessions)
    if (s.pid == pid) return &s;
  return nullptr;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (auto& l : v) s += l + "\n";
  return s;
}

}  // namespace

TEST(Recorder, RecordsWhatTheJobSendsAndReturnsItsExitCode) {
  FakeJob job([](FakeJob& j) {
    j.send(hello() + table_reg() + delta(7, 30) + wire::encode(wire::Goodbye{1000, wire::EndReason::kExit, 3}));
    j.exit_with(3);
  });
  const Recorded r = record(job, settings("plain"));
  EXPECT_EQ(r.outcome.code, 3);
  EXPECT_FALSE(r.outcome.final_save_failed);
  EXPECT_TRUE(r.said.empty()) << joined(r.said);
  // The command as given, with the recorder's socket added to its environment.
  EXPECT_EQ(job.started().argv, (std::vector<std::string>{"job", "--flag"}));
  ASSERT_EQ(job.started().env.size(), 2u);
  EXPECT_EQ(job.started().env[0], "PATH=/usr/bin");
  EXPECT_EQ(job.started().env[1].rfind("EDO_CHANNEL=/", 0), 0u);
  const model::Table* t = find_table(r.saved, "emb");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->aggregate.count(7), 30u);
  const model::Session* s = session_of(r.saved, kJobPid);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->exit_code.value_or(-1), 3);
  EXPECT_EQ(r.saved.metadata.at(model::kJobRootPid), std::to_string(kJobPid));
  EXPECT_EQ(r.saved.metadata.at("recorded_command"), "job --flag");
  EXPECT_TRUE(job.signals().empty());
}

// A signal for the job: the recorder asks the job for a flush, waits for its reply, and only
// then passes the signal on, once, also when it was noted again while the flush ran (as
// `timeout` sends it to edo's pid and then to its group).
TEST(Recorder, ASignalIsPassedOnOnceAfterTheJobsFlush) {
  FakeJob job([](FakeJob& j) {
    j.send(hello() + table_reg());
    collector::note_signal_for_job(SIGTERM);
    ASSERT_TRUE(j.wait_flush_request());
    collector::note_signal_for_job(SIGTERM);  // the same signal again, before it was passed on
    j.send(delta(5, 55) + flush_reply());
    j.wait_killed();
  });
  collector::RecordSettings st = settings("signal");
  st.flush_wait = std::chrono::minutes(1);  // the reply comes: a bound this test never meets
  const Recorded r = record(job, st);
  EXPECT_EQ(job.signals(), std::vector<int>{SIGTERM});
  EXPECT_EQ(r.outcome.code, 128 + SIGTERM);
  EXPECT_TRUE(r.said.empty()) << joined(r.said);
  const model::Table* t = find_table(r.saved, "emb");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->aggregate.count(5), 55u);  // sent only in the flush the recorder asked for
  const model::Session* s = session_of(r.saved, kJobPid);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->exit_code.value_or(-1), 128 + SIGTERM);
}

// Two different signals noted before the flush ends are both passed on, each once.
TEST(Recorder, DifferentSignalsAreEachPassedOn) {
  FakeJob job([](FakeJob& j) {
    j.send(hello());
    collector::note_signal_for_job(SIGINT);
    ASSERT_TRUE(j.wait_flush_request());
    collector::note_signal_for_job(SIGHUP);
    j.send(flush_reply());
    j.wait_killed();
  });
  collector::RecordSettings s = settings("two");
  s.flush_wait = std::chrono::minutes(1);
  const Recorded r = record(job, s);
  EXPECT_EQ(job.signals(), (std::vector<int>{SIGHUP, SIGINT}));
}

// A process that never answers the flush request: the signal is passed on after the bound,
// and one line says so.
TEST(Recorder, AFlushThatNeverComesIsBoundedAndSaid) {
  FakeJob job([](FakeJob& j) {
    j.send(hello() + table_reg());
    collector::note_signal_for_job(SIGTERM);
    ASSERT_TRUE(j.wait_flush_request());  // and never answers
    j.wait_killed();
  });
  collector::RecordSettings s = settings("silent");
  s.flush_wait = std::chrono::milliseconds(200);
  const Recorded r = record(job, s);
  EXPECT_EQ(job.signals(), std::vector<int>{SIGTERM});
  ASSERT_EQ(r.said.size(), 1u) << joined(r.said);
  EXPECT_EQ(r.said[0],
            "1 of 1 traced process(es) did not answer the flush request within 0.2 s; the signal is passed on (what they "
            "recorded since their last flush is lost)");
  EXPECT_NE(find_table(r.saved, "emb"), nullptr);  // what it sent before is kept
}

// While the job runs, the database is saved periodically: a job killed later leaves what it
// sent. The fake job ends only once the file on disk holds its table.
TEST(Recorder, TheDatabaseIsSavedWhileTheJobRuns) {
  collector::RecordSettings s = settings("periodic");
  s.save_every = std::chrono::milliseconds(50);
  // Until the end the recording is written beside the output (issue 30 §4), in this process.
  const std::string path = db::recording_file_for(s.output, getpid());
  FakeJob job([path](FakeJob& j) {
    j.send(hello() + table_reg() + delta(1, 10));
    bool seen = false;
    for (int i = 0; i < 6000 && !seen; ++i) {  // 60 s at most: the event, not a time, ends it
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      try {
        seen = find_table(db::ProfileStore(path, db::ProfileStore::Mode::kReadOnly).load(), "emb") != nullptr;
      } catch (const std::exception&) {
      }
    }
    EXPECT_TRUE(seen) << "no periodic save";
    j.exit_with(0);
  });
  const Recorded r = record(job, s);
  EXPECT_EQ(r.outcome.code, 0);
  // Killed without a goodbye: the session says so.
  const model::Session* ses = session_of(r.saved, kJobPid);
  ASSERT_NE(ses, nullptr);
  EXPECT_EQ(ses->drops.count("ended_without_final_flush"), 1u);
}

// A job that records nothing still gets a row (its exit code), and one line says so.
TEST(Recorder, AJobThatReportsNothingGetsARowAndALine) {
  FakeJob job([](FakeJob& j) { j.exit_with(5); });
  const Recorded r = record(job, settings("nothing"));
  EXPECT_EQ(r.outcome.code, 5);
  ASSERT_EQ(r.said.size(), 1u);
  EXPECT_EQ(r.said[0].rfind("no traced process reported anything", 0), 0u) << r.said[0];
  const model::Session* s = session_of(r.saved, kJobPid);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->exit_code.value_or(-1), 5);
  EXPECT_EQ(s->command, "job --flag");
}

// A stream cut in the middle of a frame: the issue is said with its byte offset.
TEST(Recorder, ADamagedStreamIsSaidWithItsOffset) {
  const std::string first = hello() + table_reg();
  FakeJob job([first](FakeJob& j) {
    const std::string d = delta(2, 4);
    j.send(first + d.substr(0, d.size() / 2));
    j.exit_with(0);
  });
  const Recorded r = record(job, settings("cut"));
  ASSERT_FALSE(r.said.empty());
  EXPECT_NE(r.said.back().find(", byte " + std::to_string(first.size()) + ": "), std::string::npos) << joined(r.said);
  EXPECT_NE(find_table(r.saved, "emb"), nullptr);
}
