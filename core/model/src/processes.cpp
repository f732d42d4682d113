// Roles of the recorded processes and tables inherited across fork. See processes.h.
#include "edo/model/processes.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

namespace edo::model {

namespace {

// Times read from a database: a damaged or hostile file may hold anything, so sums and
// differences saturate instead of overflowing.
int64_t saturated(int64_t a, int64_t b, bool subtract) {
  int64_t r;
  if (!(subtract ? __builtin_sub_overflow(a, b, &r) : __builtin_add_overflow(a, b, &r))) return r;
  return (subtract ? b < 0 : b > 0) ? INT64_MAX : INT64_MIN;
}

std::optional<int64_t> metadata_int(const Profile& p, const char* key) {
  auto it = p.metadata.find(key);
  if (it == p.metadata.end() || it->second.empty()) return std::nullopt;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (*end != '\0') return std::nullopt;
  return v;
}

// The session a session was forked from: the parent pid's latest session on the same host
// with the same command line (fork keeps it; exec replaces it) that started no later.
std::vector<int64_t> fork_parents(const Profile& p) {
  const auto& ss = p.sessions;
  std::multimap<int64_t, size_t> by_pid;
  for (size_t i = 0; i < ss.size(); ++i) by_pid.emplace(ss[i].pid, i);
  std::vector<int64_t> parent(ss.size(), -1);
  for (size_t i = 0; i < ss.size(); ++i) {
    const Session& s = ss[i];
    auto [lo, hi] = by_pid.equal_range(s.parent_pid);
    int64_t best = -1;
    for (auto it = lo; it != hi; ++it) {
      const Session& c = ss[it->second];
      if (it->second == i || c.host != s.host || c.command != s.command) continue;
      if (c.start_unix_ns > s.start_unix_ns && s.start_unix_ns != 0) continue;
      if (best < 0 || c.start_unix_ns >= ss[size_t(best)].start_unix_ns) best = int64_t(it->second);
    }
    parent[i] = best;
  }
  return parent;
}

// A session and the sessions it was forked from, nearest first.
std::vector<size_t> fork_line(const std::vector<int64_t>& parent, size_t of) {
  std::vector<size_t> line{of};
  for (int64_t at = parent[of]; at >= 0 && line.size() < 256; at = parent[size_t(at)]) line.push_back(size_t(at));
  return line;
}

// One forked from the other, or both from a common recorded process: they shared pages.
bool same_fork_family(const std::vector<int64_t>& parent, size_t a, size_t b) {
  const std::vector<size_t> la = fork_line(parent, a), lb = fork_line(parent, b);
  for (size_t x : la)
    if (std::find(lb.begin(), lb.end(), x) != lb.end()) return true;
  return false;
}

}  // namespace

const char* role_name(Role r) {
  switch (r) {
    case Role::kRoot: return "root";
    case Role::kRank: return "rank";
    case Role::kWorker: return "worker";
    case Role::kChild: return "child";
  }
  return "child";
}

size_t JobView::count(Role r) const { return static_cast<size_t>(std::count(roles.begin(), roles.end(), r)); }

JobView job_view(const Profile& p) {
  JobView job;
  const auto& ss = p.sessions;
  job.roles.assign(ss.size(), Role::kChild);
  const std::vector<int64_t> parent = fork_parents(p);

  // The root pid: from `edo record`, else the earliest process whose parent is not recorded.
  std::optional<int64_t> root_pid = metadata_int(p, kJobRootPid);
  if (!root_pid) {
    std::set<int64_t> pids;
    for (const auto& s : ss) pids.insert(s.pid);
    const Session* first = nullptr;
    for (const auto& s : ss) {
      if (pids.count(s.parent_pid) && s.parent_pid != s.pid) continue;
      if (!first || s.start_unix_ns < first->start_unix_ns) first = &s;
    }
    if (first) root_pid = first->pid;
  }
  // A merged recording names its roots (one per input) by session notes.
  std::set<int64_t> noted_roots;
  for (const auto& s : ss)
    if (auto it = p.metadata.find("session." + std::to_string(s.id) + "." + kRootNote); it != p.metadata.end() && it->second == "1")
      noted_roots.insert(s.id);
  job.pid = root_pid;
  if (!noted_roots.empty()) job.pid.reset();
  int64_t first_start = 0, last_end = 0;
  bool any_root = false;
  for (size_t i = 0; i < ss.size(); ++i) {
    if (noted_roots.empty() ? (!root_pid || ss[i].pid != *root_pid) : !noted_roots.count(ss[i].id)) continue;
    job.roles[i] = Role::kRoot;
    job.root = int64_t(i);  // the last image of the root process (it holds the exit code)
    const int64_t end = saturated(ss[i].start_unix_ns, ss[i].duration_ns, false);
    if (!any_root || ss[i].start_unix_ns < first_start) first_start = ss[i].start_unix_ns;
    last_end = std::max(last_end, end);
    any_root = true;
  }
  if (!noted_roots.empty()) {
    // The earliest root stands for the job; any root's failure is the job's.
    for (size_t i = 0; i < ss.size(); ++i)
      if (job.roles[i] == Role::kRoot && (job.root < 0 || ss[i].start_unix_ns < ss[size_t(job.root)].start_unix_ns))
        job.root = int64_t(i);
    job.pid = ss[size_t(job.root)].pid;
  }
  if (job.root >= 0) {
    const Session& r = ss[size_t(job.root)];
    job.exit_code = r.exit_code;
    for (size_t i = 0; i < ss.size() && !noted_roots.empty(); ++i)
      if (job.roles[i] == Role::kRoot && ss[i].exit_code && *ss[i].exit_code != 0 && (!job.exit_code || *job.exit_code == 0))
        job.exit_code = ss[i].exit_code;
    job.host = r.host;
    job.start_unix_ns = first_start;
    job.duration_ns = saturated(last_end, first_start, true);
    // The command the user ran: the first image's (an exec'ed root shows its later one below).
    for (size_t i = 0; i < ss.size(); ++i)
      if (job.roles[i] == Role::kRoot) {
        job.command = ss[i].command;
        break;
      }
  }
  if (auto it = p.metadata.find(kJobCommand); it != p.metadata.end() && !it->second.empty()) job.command = it->second;
  if (auto d = metadata_int(p, kJobDurationNs)) job.duration_ns = *d;

  // Ranks: per RANK value, its first process that was not forked from another of that rank.
  std::map<int64_t, size_t> rank_main;
  for (size_t i = 0; i < ss.size(); ++i) {
    // A root with a RANK is a rank too (a rank traced on its own, as one input of `edo merge`).
    if (!ss[i].rank) continue;
    const int64_t r = *ss[i].rank;
    const int64_t par = parent[i];
    if (par >= 0 && ss[size_t(par)].rank == ss[i].rank) continue;
    auto it = rank_main.find(r);
    if (it == rank_main.end() || ss[i].start_unix_ns < ss[it->second].start_unix_ns) rank_main[r] = i;
  }
  for (auto& [r, i] : rank_main) {
    if (job.roles[i] != Role::kRoot) job.roles[i] = Role::kRank;
    job.ranks.push_back(i);
  }
  for (size_t i = 0; i < ss.size(); ++i)
    if (job.roles[i] == Role::kChild && parent[i] >= 0) job.roles[i] = Role::kWorker;

  if (job.root >= 0) job.steps = ss[size_t(job.root)].steps;
  if (job.steps == 0)
    for (const auto& s : ss) job.steps = std::max(job.steps, s.steps);
  return job;
}

std::vector<size_t> same_table_as(const Profile& p) {
  std::vector<size_t> same(p.tables.size());
  for (size_t i = 0; i < same.size(); ++i) same[i] = i;
  std::map<int64_t, size_t> session_index;
  for (size_t i = 0; i < p.sessions.size(); ++i) session_index[p.sessions[i].id] = i;
  const std::vector<int64_t> parent = fork_parents(p);
  // Tables that could be one memory: same name, address, shape, dtype and device.
  using Key = std::tuple<std::string, uint64_t, uint64_t, uint32_t, std::string, std::string>;
  std::map<Key, std::vector<size_t>> groups;
  for (size_t i = 0; i < p.tables.size(); ++i) {
    const Table& t = p.tables[i];
    if (t.base_address == 0 || !session_index.count(t.session_id)) continue;
    groups[{t.name, t.base_address, t.rows, t.dim, t.dtype, t.device}].push_back(i);
  }
  for (auto& [key, members] : groups) {
    for (size_t k = 1; k < members.size(); ++k) {
      const size_t ti = members[k];
      const size_t si = session_index[p.tables[ti].session_id];
      for (size_t m = 0; m < k; ++m) {
        const size_t tj = members[m];
        const size_t sj = session_index[p.tables[tj].session_id];
        const Session& a = p.sessions[si];
        const Session& b = p.sessions[sj];
        if (si == sj || a.host != b.host || a.rank != b.rank) continue;
        if (!same_fork_family(parent, si, sj)) continue;
        same[ti] = same[tj];
        break;
      }
    }
  }
  return same;
}

}  // namespace edo::model
