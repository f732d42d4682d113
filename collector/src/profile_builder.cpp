#include <algorithm>
#include <cstdio>
#include <set>
#include <type_traits>
#include <unordered_map>

#include "edo/collector/collector.h"

#include "edo/model/profile_summary.h"
#include "edo/dtype.h"
#include "edo/model/drops.h"
#include "edo/model/profile_summary.h"
#include "edo/wire/attribution.h"

namespace edo::collector {

namespace {
// The wire carries edo_dtype's code; the profile stores its name (edo/dtype.h).
std::string dtype_name(uint8_t d) {
  const auto t = dtype_from_code(d);
  return std::string(edo::dtype_name(t ? *t : DType::Uint8));
}
}  // namespace

struct ProfileBuilder::Stream {
  std::string label;
  wire::StreamDecoder dec;
  bool open = true;
  int64_t session = -1;                       // index into profile_.sessions
  std::unordered_map<uint32_t, size_t> tables; // wire table id -> index into profile_.tables
  std::set<size_t> has_agg;                   // tables that received a first delta
  std::map<std::pair<size_t, std::string>, uint64_t> extra;  // (table, kind) -> bytes
  // table -> (snapshot sequence number, index into profile_.weights) of its weight snapshot
  std::map<size_t, std::pair<uint32_t, size_t>> weights;
  bool skipping = false;  // a session of another run than keep_only_run()'s: its frames are ignored
  Peer peer;              // the connected process (edo record's streams)
  bool any_frame = false; // a frame (even one skipped) arrived
};

ProfileBuilder::ProfileBuilder(std::string source) : source_(std::move(source)) {}
ProfileBuilder::~ProfileBuilder() = default;

int ProfileBuilder::open_stream(std::string label, Peer peer) {
  auto s = std::make_unique<Stream>();
  s->label = std::move(label);
  s->peer = std::move(peer);
  streams_.push_back(std::move(s));
  return int(streams_.size() - 1);
}

size_t ProfileBuilder::open_streams() const {
  size_t n = 0;
  for (auto& s : streams_) n += s->open;
  return n;
}

void ProfileBuilder::feed(int stream, const void* data, size_t n) {
  Stream& s = *streams_.at(size_t(stream));
  s.dec.feed(data, n);
  drain(s);
}

void ProfileBuilder::drain(Stream& s) {
  wire::Message m;
  while (true) {
    auto r = s.dec.next(m);
    if (r.status == wire::StreamDecoder::Status::kNeedMore) break;
    if (r.status == wire::StreamDecoder::Status::kCorrupt) {
      issues_.push_back({s.label, r.offset, "corrupt data: " + r.error});
      continue;
    }
    ++frames_;
    ++generation_;
    s.any_frame = true;
    apply(s, m, r.offset);
  }
}

void ProfileBuilder::close_stream(int stream) { close_stream(stream, {}); }

void ProfileBuilder::close_stream(int stream, const std::function<bool()>& peer_runs_on) {
  Stream& s = *streams_.at(size_t(stream));
  if (!s.open) return;
  s.open = false;
  // Frames after a damaged header that claims more bytes than the stream holds are decoded
  // now that no more bytes can come.
  s.dec.end_of_stream();
  drain(s);
  if (s.dec.pending_bytes() > 0)
    issues_.push_back({s.label, s.dec.consumed_offset(),
                       "truncated: the last " + std::to_string(s.dec.pending_bytes()) +
                           " bytes are not a whole frame (kept everything before)"});
  if (s.session < 0 && !s.any_frame && s.peer.pid > 0) {
    // The process connected (it loaded the tracer and registered or read a table) and its
    // stream ended before its first flush arrived: it died or was killed right after. Without
    // this it left no trace at all, and the recording read as if the job had never loaded
    // the tracer (issue 30 §6).
    model::Session ses;
    ses.id = next_session_id_++;
    ses.source = source_;
    ses.pid = s.peer.pid;
    ses.parent_pid = s.peer.ppid;
    ses.host = s.peer.host;
    ses.command = s.peer.command;  // "" when it was gone before it was accepted: the recorder fills it in
    profile_.sessions.push_back(ses);
    s.session = int64_t(profile_.sessions.size() - 1);
  }
  end_session(s, peer_runs_on);
}

void ProfileBuilder::close_all_streams() {
  for (size_t i = 0; i < streams_.size(); ++i) close_stream(int(i));
}

// The stream's session is over (its stream ended, or a new Hello followed): without its
// Goodbye, whatever the process recorded after its last flush never arrived.
// A process that still ran when its stream ended was neither killed nor crashed: its
// connection was taken from it (the job closed the tracer's descriptor), and the rest of its
// trace went to its unsent file: that, not a crash, is what the session says (issue 30 §6).
void ProfileBuilder::end_session(Stream& s, const std::function<bool()>& peer_runs_on) {
  if (s.session < 0) return;
  model::Session& ses = profile_.sessions[size_t(s.session)];
  if (said_goodbye_.count(ses.id)) return;
  ses.drops[peer_runs_on && peer_runs_on() ? model::kConnectionLost : model::kEndedWithoutFinalFlush] = 1;
  ses.dropped_events = model::dropped_events_of(ses.drops);
  ++generation_;
}

model::Session* ProfileBuilder::session(Stream& s) {
  if (s.session < 0) {
    // Frames before any hello (should not happen): give them an anonymous session.
    model::Session ses;
    ses.id = next_session_id_++;
    ses.source = source_;
    ses.command = "(unknown: stream without hello)";
    profile_.sessions.push_back(ses);
    s.session = int64_t(profile_.sessions.size() - 1);
  }
  return &profile_.sessions[size_t(s.session)];
}

void ProfileBuilder::apply(Stream& s, wire::Message& msg, uint64_t offset) {
  if (const auto* h = std::get_if<wire::Hello>(&msg); h && only_run_) {
    s.skipping = h->run_id != *only_run_;
    if (s.skipping) {
      end_session(s);
      s.session = -1;
      s.tables.clear();
      s.has_agg.clear();
      s.weights.clear();
      ++skipped_sessions_;
      return;
    }
  }
  if (s.skipping) return;
  std::visit([&](auto& v) { on(s, v, offset); }, msg);
}

// One handler per message type (a type without one does not compile).
void ProfileBuilder::on(Stream& s, wire::Hello& v, uint64_t /*offset*/) {
  end_session(s);
  model::Session ses;
  ses.id = next_session_id_++;
  ses.command = v.command;
  ses.host = v.host;
  ses.pid = v.pid;
  ses.parent_pid = v.ppid;
  ses.rank = v.rank;
  ses.local_rank = v.local_rank;
  ses.identity.job_id = v.job_id;
  ses.identity.master = v.master;
  ses.identity.world_size = v.world_size;
  ses.identity.group_rank = v.group_rank;
  ses.identity.local_world_size = v.local_world_size;
  ses.start_unix_ns = v.start_unix_ns;
  ses.source = source_;
  profile_.sessions.push_back(ses);
  s.session = int64_t(profile_.sessions.size() - 1);
  s.tables.clear();
  s.has_agg.clear();
  s.weights.clear();
  for (auto& [k, val] : v.settings) profile_.metadata["setting." + k] = val;
  if (!v.run_id.empty()) profile_.metadata["run_id"] = v.run_id;
  if (!v.tool_version.empty()) profile_.metadata["tracer_version"] = v.tool_version;
}

void ProfileBuilder::on(Stream& s, wire::TableReg& v, uint64_t /*offset*/) {
  model::Session* ses = session(s);
  model::Table t;
  t.session_id = ses->id;
  t.name = v.name;
  t.rows = v.rows;
  t.dim = v.dim;
  t.dtype = dtype_name(v.dtype);
  t.device = v.device == 1 ? (v.device_index >= 0 ? "cuda:" + std::to_string(v.device_index) : "cuda") : "host";
  t.base_address = v.base;
  t.weight_bytes = v.rows * v.dim * std::max<uint32_t>(1, model::dtype_size(t.dtype));
  take_pending_facts(t);
  profile_.tables.push_back(std::move(t));
  s.tables[v.id] = profile_.tables.size() - 1;
}

void ProfileBuilder::on(Stream& s, wire::Tie& v, uint64_t offset) {
  model::Session* ses = session(s);
  auto a = s.tables.find(v.table), b = s.tables.find(v.tied_with);
  if (a == s.tables.end() || b == s.tables.end()) {
    issues_.push_back({s.label, offset, "tie refers to an unknown table id"});
    return;
  }
  profile_.ties.push_back({ses->id, profile_.tables[a->second].name, profile_.tables[b->second].name});
}

void ProfileBuilder::on(Stream& s, wire::TableDelta& v, uint64_t offset) {
  auto it = s.tables.find(v.table);
  if (it == s.tables.end()) {
    issues_.push_back({s.label, offset, "delta for an unknown table id " + std::to_string(v.table)});
    return;
  }
  stats::TableAggregate agg;
  if (!stats::TableAggregate::deserialize(v.aggregate, agg)) {
    issues_.push_back({s.label, offset, "undecodable table aggregate (skipped)"});
    return;
  }
  model::Table& t = profile_.tables[it->second];
  first_seen_[it->second].add(s.has_agg.count(it->second) ? t.aggregate : stats::TableAggregate(), agg);
  if (!s.has_agg.count(it->second)) {
    t.aggregate = std::move(agg);
    s.has_agg.insert(it->second);
  } else if (!t.aggregate.merge(agg)) {
    issues_.push_back({s.label, offset, "table aggregate of another shape for '" + t.name + "' (skipped)"});
  }
}

void ProfileBuilder::on(Stream& s, wire::ExtraBytes& v, uint64_t /*offset*/) {
  auto it = s.tables.find(v.table);
  if (it == s.tables.end()) return;
  // Each kind replaces its previous value; gradients and optimizer state are kept apart.
  model::Table& t = profile_.tables[it->second];
  uint64_t& slot = s.extra[{it->second, v.kind}];
  uint64_t& part = model::is_gradient_kind(v.kind) ? t.grad_bytes : t.optimizer_bytes;
  part = part - slot + v.bytes;
  slot = v.bytes;
  t.extra_by_kind[v.kind] = v.bytes;
}

void ProfileBuilder::on(Stream& s, wire::Steps& v, uint64_t /*offset*/) {
  session(s)->steps = v.steps;
}

void ProfileBuilder::on(Stream& s, wire::MemoryEvents& v, uint64_t /*offset*/) {
  model::Session* ses = session(s);
  for (auto& e : v.events)
    profile_.memory_events.push_back({ses->id, e.time_ns, e.bytes, e.address, e.stream, e.device, e.kind, ""});
}

void ProfileBuilder::on(Stream& s, wire::KernelStats& v, uint64_t /*offset*/) {
  model::Session* ses = session(s);
  auto& ks = profile_.kernels;
  ks.erase(std::remove_if(ks.begin(), ks.end(), [&](const model::KernelStat& k) { return k.session_id == ses->id; }), ks.end());
  for (auto& k : v.kernels) {
    model::KernelStat st{ses->id, k.name, k.launches, k.total_ns, k.tables, {}};
    for (auto& t : k.per_table) st.per_table.push_back({t.table, t.launches, t.total_ns});
    ks.push_back(std::move(st));
  }
}

void ProfileBuilder::on(Stream& s, wire::RangeStats& v, uint64_t /*offset*/) {
  model::Session* ses = session(s);
  auto& rs = profile_.ranges;
  rs.erase(std::remove_if(rs.begin(), rs.end(), [&](const model::RangeStat& r) { return r.session_id == ses->id; }), rs.end());
  for (auto& r : v.ranges) rs.push_back({ses->id, r.name, r.count, r.total_ns, r.lookups, r.alloc_bytes});
}

void ProfileBuilder::on(Stream& s, wire::Dropped& v, uint64_t /*offset*/) {
  // Absolute values, each counter replacing its previous one.
  model::Session* ses = session(s);
  for (auto& [k, n] : v.counters) ses->drops[k] = n;
  ses->dropped_events = model::dropped_events_of(ses->drops);
}

void ProfileBuilder::on(Stream& s, wire::Note& v, uint64_t offset) {
  if (v.key == wire::kFlushReplyNote) {
    ++flush_replies_;
    return;
  }
  model::Session* ses = session(s);
  if (v.key == "edo.gpu") {
    // The tracer names each GPU it sets up counting on: the session's GPUs, distinct,
    // comma-separated (what `edo tune` matches a stored device profile against).
    const std::string list = "," + ses->gpus + ",";
    if (list.find("," + v.value + ",") == std::string::npos) ses->gpus += (ses->gpus.empty() ? "" : ",") + v.value;
  }
  if (apply_training_note(s.label, *ses, v, offset)) return;
  profile_.metadata["session." + std::to_string(ses->id) + "." + v.key] = v.value;
  profile_.metadata[v.key] = v.value;
}

void ProfileBuilder::on(Stream& s, wire::WeightRows& v, uint64_t offset) {
  apply_weight_rows(s, v, offset);
}

void ProfileBuilder::on(Stream& s, wire::Goodbye& v, uint64_t /*offset*/) {
  model::Session* ses = session(s);
  said_goodbye_.insert(ses->id);
  ses->duration_ns = v.duration_ns;
  if (v.reason == wire::EndReason::kSignal && !ses->exit_code) ses->exit_code = 128 + v.code;
}

// One part of a weight snapshot: a part of a new snapshot (another sequence number) replaces
// the table's previous snapshot; parts of the same snapshot are appended, hot rows before the
// sample. A part that does not fit its table is reported and skipped (the rest is kept).
void ProfileBuilder::apply_weight_rows(Stream& s, wire::WeightRows& v, uint64_t offset) {
  auto it = s.tables.find(v.table);
  if (it == s.tables.end()) {
    issues_.push_back({s.label, offset, "weight rows for an unknown table id " + std::to_string(v.table)});
    return;
  }
  const model::Table& t = profile_.tables[it->second];
  const std::string dtype = dtype_name(v.dtype);
  const uint64_t elem = model::dtype_size(dtype);
  bool fits = v.dim == t.dim && v.values.size() == v.rows.size() * uint64_t{v.dim} * elem && v.table_rows == t.rows;
  for (uint64_t r : v.rows) fits = fits && r < t.rows;
  if (!fits) {
    issues_.push_back({s.label, offset, "weight rows that do not fit table '" + t.name + "' (skipped)"});
    return;
  }
  auto w = s.weights.find(it->second);
  if (w == s.weights.end() || w->second.first != v.snapshot) {
    size_t index;
    if (w == s.weights.end()) {
      index = profile_.weights.size();
      profile_.weights.emplace_back();
    } else {
      index = w->second.second;
    }
    const uint64_t revision = profile_.weights[index].revision;
    profile_.weights[index] = model::WeightSnapshot{};
    profile_.weights[index].revision = revision;
    s.weights[it->second] = {v.snapshot, index};
    w = s.weights.find(it->second);
  }
  model::WeightSnapshot& snap = profile_.weights[w->second.second];
  snap.session_id = t.session_id;
  snap.table = t.name;
  snap.dtype = dtype;
  snap.dim = v.dim;
  snap.table_rows = v.table_rows;
  snap.population = v.population;
  const size_t row_bytes = size_t(v.dim) * elem;
  // Hot rows go after the hot rows already there, sampled rows at the end.
  snap.rows.insert(snap.rows.begin() + long(snap.hot_count), v.rows.begin(), v.rows.begin() + long(v.hot_rows));
  snap.values.insert(snap.hot_count * row_bytes, v.values, 0, v.hot_rows * row_bytes);
  snap.hot_count += v.hot_rows;
  snap.rows.insert(snap.rows.end(), v.rows.begin() + long(v.hot_rows), v.rows.end());
  snap.values.append(v.values, v.hot_rows * row_bytes, std::string::npos);
  snap.revision += 1;
}

void ProfileBuilder::set_exit_code(int64_t pid, int code) {
  for (auto it = profile_.sessions.rbegin(); it != profile_.sessions.rend(); ++it) {
    if (it->pid == pid) {
      it->exit_code = code;
      return;
    }
  }
}

void ProfileBuilder::attribute() {
  // Per session: the tables' address ranges (device tables first, host tables too).
  std::map<int64_t, wire::AddressIndex::Builder> builders;
  for (auto& t : profile_.tables) builders[t.session_id].add(t.base_address, t.weight_bytes, t.name);
  std::map<int64_t, wire::AddressIndex> idx;
  for (auto& [sid, b] : builders) idx.emplace(sid, std::move(b).build());
  for (auto& e : profile_.memory_events) {
    auto it = idx.find(e.session_id);
    if (it == idx.end()) continue;
    if (e.bytes > 0) {
      if (auto* ent = it->second.attribute(e.address, uint64_t(e.bytes))) e.table = ent->name;
    } else if (auto* ent = it->second.find(e.address)) {
      e.table = ent->name;
    }
  }
  // Frees carry the attribution of their allocation (the allocation may contain the table
  // rather than start inside it).
  std::map<std::pair<int64_t, uint64_t>, std::string> live;
  for (auto& e : profile_.memory_events) {
    if (e.bytes > 0) live[{e.session_id, e.address}] = e.table;
    else if (auto it = live.find({e.session_id, e.address}); it != live.end()) {
      e.table = it->second;
      live.erase(it);
    }
  }
}

model::Profile& ProfileBuilder::finish() {
  attribute();
  for (const auto& [ti, tracker] : first_seen_) profile_.tables[ti].first_seen = tracker.finish(profile_.tables[ti].aggregate);
  return profile_;
}

namespace {

// "weight snapshots: 2 of 3 table(s) (none for: a.b)": tables by name over every session; a
// tied name shares its owner's weights and has no snapshot of its own, so it is not counted.
std::string weights_line(const model::Profile& p) {
  std::set<std::string> tied, names, with;
  for (const auto& t : p.ties) tied.insert(t.tied_with);
  for (const auto& t : p.tables)
    if (!tied.count(t.name)) names.insert(t.name);
  for (const auto& w : p.weights)
    if (!w.rows.empty()) with.insert(w.table);
  std::string out = "weight snapshots: " + std::to_string(with.size()) + " of " + std::to_string(names.size()) +
                    " table(s)";
  std::string missing;
  size_t shown = 0, left = 0;
  for (const auto& n : names) {
    if (with.count(n)) continue;
    if (shown < 3) missing += (shown++ ? ", " : "") + n;
    else ++left;
  }
  if (!missing.empty()) out += " (none for " + missing + (left ? " and " + std::to_string(left) + " more" : "") + ")";
  return out;
}

}  // namespace

std::vector<std::string> summary_lines(const model::Profile& p, bool weights_asked) {
  uint64_t lookups = 0;
  for (auto& t : p.tables) lookups += t.aggregate.lookups();
  std::vector<std::string> out;
  // Tables as `edo report` lists them (one table registered by several processes, forked
  // workers or ranks, is one), and ties by their names (each process reports its own).
  const size_t tables = model::table_views(p).size();
  std::set<std::pair<std::string, std::string>> ties;
  for (const auto& t : p.ties) ties.emplace(t.table, t.tied_with);
  out.push_back(std::to_string(p.sessions.size()) + " session(s), " + std::to_string(tables) + " table(s)" +
                (p.tables.size() != tables ? " (" + std::to_string(p.tables.size()) +
                                                 " registrations: a table several processes registered counts once)"
                                           : "") +
                ", " + std::to_string(lookups) + " lookups, " + std::to_string(ties.size()) + " tie(s)");
  uint64_t alloc_events = 0;
  for (auto& e : p.memory_events) alloc_events += e.bytes > 0;
  out.push_back("peak memory " + model::format_bytes(static_cast<uint64_t>(std::max<int64_t>(p.peak_bytes(), 0))) + " (" + std::to_string(alloc_events) +
                " device allocation(s) traced, table memory " + model::format_bytes(p.table_bytes()) + ")");
  // The advice names the settings that lift the losses there are (each counter's own), none for a
  // loss no setting lifts.
  const std::string lift = model::lifting_settings(p.drops());
  // A loss counted in another unit (lookups of a table that got no statistics) leaves the event
  // count at 0: the line then says so rather than "0 (raise ...)".
  const bool other_loss = p.dropped_events() == 0 && !lift.empty();
  out.push_back("dropped events: " + std::to_string(p.dropped_events()) + (other_loss ? ", but data was lost (below)" : "") +
                (lift.empty() ? "" : " (raise " + lift + ")"));
  for (const auto& [name, n] : p.drops())
    if (n) out.push_back("  " + model::describe_drop(name, n));
  if (weights_asked || !p.weights.empty()) out.push_back(weights_line(p));
  return out;
}

}  // namespace edo::collector
