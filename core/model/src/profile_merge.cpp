// `edo merge` on profiles: checks, canonical order, clock alignment, metadata. See profile_merge.h.
#include "edo/model/profile_merge.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <utility>

#include "edo/model/processes.h"
#include "edo/model/rank_identity.h"

namespace edo::model {
namespace {

// ---- Checks --------------------------------------------------------------------------------

std::string list_keys(const std::set<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

void check_inputs(const std::vector<LabeledProfile>& in, const MergeOptions& o, MergeSummary& sum) {
  auto refuse = [&](const std::string& why) {
    if (!o.force) throw MergeRefused(why + ", or pass --force to merge anyway");
    sum.warnings.push_back(why + " (merged: --force)");
  };
  std::vector<std::set<std::string>> keys(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    for (const auto& s : in[i].profile.sessions)
      if (std::string k = job_key(s.identity); !k.empty()) keys[i].insert(std::move(k));
    if (keys[i].empty())
      refuse(in[i].label + " has no job identity (its processes had no TORCHELASTIC_RUN_ID or MASTER_ADDR/MASTER_PORT "
             "in their environment, or it was recorded by an edo before 0.9); record the job's ranks with the launcher's "
             "environment");
  }
  // Different jobs: the first input with an identity against each other one.
  size_t first = in.size();
  for (size_t i = 0; i < in.size() && first == in.size(); ++i)
    if (!keys[i].empty()) first = i;
  for (size_t i = 0; i < in.size(); ++i) {
    if (i == first || keys[i].empty() || first == in.size()) continue;
    if (keys[i] != keys[first])
      refuse(in[first].label + " and " + in[i].label + " are recordings of different jobs (" + list_keys(keys[first]) +
             " vs " + list_keys(keys[i]) + "); merge the recordings of one job");
  }
  // The same rank of one job in two inputs: a node recorded twice, or two runs of one script.
  std::map<std::pair<std::string, int64_t>, size_t> owner;
  for (size_t i = 0; i < in.size(); ++i) {
    std::set<std::pair<std::string, int64_t>> mine;
    for (const auto& s : in[i].profile.sessions)
      if (s.rank) mine.insert({job_key(s.identity), *s.rank});
    for (const auto& r : mine) {
      auto [it, fresh] = owner.emplace(r, i);
      if (!fresh)
        refuse(in[it->second].label + " and " + in[i].label + " both recorded rank " + std::to_string(r.second) +
               (r.first.empty() ? std::string() : " of job " + r.first) +
               " (was one node recorded twice?); give each rank's recording once");
    }
  }
}

// ---- Metadata ------------------------------------------------------------------------------

// A key whose inputs disagree keeps every value, as a set under kValuesPrefix + key (the key
// itself is dropped: no input's value speaks for the job). Sets unite, so any grouping of
// merges ends with the same sets.
constexpr const char* kValuesPrefix = "merge.values.";
// Keys whose merged value is the largest input's (a number).
const std::set<std::string> kMaxKeys = {"job.duration_ns"};

std::string escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// A set is stored one member a line, each escaped and marked with '=' (so that an empty member
// is a line of its own).
std::set<std::string> decode_set(const std::string& v) {
  std::set<std::string> out;
  size_t at = 0;
  while (at <= v.size() && !v.empty()) {
    const size_t nl = std::min(v.find('\n', at), v.size());
    std::string member = v.substr(at, nl - at);
    if (!member.empty() && member[0] == '=') member.erase(0, 1);
    out.insert(std::move(member));
    at = nl + 1;
  }
  return out;
}

std::string encode_set(const std::set<std::string>& s) {
  std::string out;
  for (const auto& v : s) out += (out.empty() ? "=" : "\n=") + v;  // members are escaped already
  return out;
}

bool is_number(const std::string& v) {
  return !v.empty() && v.size() <= 18 && v.find_first_not_of("0123456789") == std::string::npos;
}

// "session.<id>.<rest>" -> (id, rest)
bool session_note(const std::string& key, int64_t& id, std::string& rest) {
  if (key.rfind("session.", 0) != 0) return false;
  const size_t dot = key.find('.', 8);
  if (dot == std::string::npos || dot == 8) return false;
  const std::string num = key.substr(8, dot - 8);
  if (!is_number(num)) return false;
  id = std::stoll(num);
  rest = key.substr(dot + 1);
  return true;
}

void merge_metadata(std::vector<LabeledProfile>& in, const std::vector<std::map<int64_t, int64_t>>& new_id,
                    std::map<std::string, std::string>& out) {
  std::map<std::string, std::vector<std::string>> plain;  // key -> each input's value
  std::map<std::string, std::set<std::string>> sets;      // key -> values already in conflict
  std::map<std::string, size_t> present;
  for (size_t i = 0; i < in.size(); ++i) {
    for (auto& [k, v] : in[i].profile.metadata) {
      int64_t id = 0;
      std::string rest;
      if (session_note(k, id, rest)) {
        auto it = new_id[i].find(id);
        if (it != new_id[i].end()) out["session." + std::to_string(it->second) + "." + rest] = v;
        continue;
      }
      if (k.rfind(kValuesPrefix, 0) == 0) {
        const auto vals = decode_set(v);
        sets[k.substr(std::char_traits<char>::length(kValuesPrefix))].insert(vals.begin(), vals.end());
        continue;
      }
      plain[k].push_back(v);
    }
  }
  for (auto& [k, vals] : plain) {
    if (kMaxKeys.count(k) && std::all_of(vals.begin(), vals.end(), is_number)) {
      out[k] = *std::max_element(vals.begin(), vals.end(), [](const std::string& a, const std::string& b) {
        return std::stoll(a) < std::stoll(b);
      });
      continue;
    }
    const std::string& first = vals[0];  // (a structured binding cannot be captured before C++20's P1091 in clang)
    const bool agree = std::all_of(vals.begin(), vals.end(), [&](const std::string& v) { return v == first; });
    if (agree && !sets.count(k)) {
      out[k] = vals[0];
      continue;
    }
    for (const auto& v : vals) sets[k].insert(escape(v));
  }
  for (auto& [k, vals] : sets) out[kValuesPrefix + k] = encode_set(vals);
}

// ---- Order ---------------------------------------------------------------------------------

using SessionKey = std::tuple<std::string, int64_t, int64_t, int64_t, std::string, int64_t, int64_t, int64_t, uint64_t,
                              int, std::string, std::string, std::string, std::string>;

SessionKey key_of(const Session& s) {
  return {s.host, s.start_unix_ns, s.pid, s.parent_pid, s.command, s.rank.value_or(INT64_MIN),
          s.local_rank.value_or(INT64_MIN), s.duration_ns, s.steps, s.exit_code.value_or(INT_MIN), s.source, s.gpus,
          s.identity.job_id, s.identity.master};
}

// Each host's first process moved to the earliest first process of all hosts.
void align_starts(std::vector<Session*>& sessions) {
  std::map<std::string, int64_t> first;
  for (const Session* s : sessions) {
    if (s->start_unix_ns == 0) continue;  // unknown start: nothing to align
    auto [it, fresh] = first.emplace(s->host, s->start_unix_ns);
    if (!fresh) it->second = std::min(it->second, s->start_unix_ns);
  }
  if (first.empty()) return;
  int64_t earliest = INT64_MAX;
  for (auto& [h, t] : first) earliest = std::min(earliest, t);
  for (Session* s : sessions) {
    auto it = first.find(s->host);
    if (it == first.end() || s->start_unix_ns == 0) continue;
    const int64_t shift = earliest - it->second;
    s->start_unix_ns += shift;
    s->identity.clock_shift_ns += shift;
  }
}

}  // namespace

Profile merge_profiles(std::vector<LabeledProfile>& in, const MergeOptions& o, MergeSummary* summary) {
  MergeSummary sum;
  check_inputs(in, o, sum);

  // Each input's root (the launcher `edo record` started) stays a root of the merged job: a
  // session note, so that it follows its session through this and later merges.
  for (auto& lp : in) {
    const JobView jv = job_view(lp.profile);
    for (size_t i = 0; i < lp.profile.sessions.size(); ++i)
      if (jv.roles[i] == Role::kRoot)
        lp.profile.metadata["session." + std::to_string(lp.profile.sessions[i].id) + "." + kRootNote] = "1";
  }
  // Every session, with where it came from, in canonical order.
  struct Ref {
    size_t input;
    size_t index;
  };
  std::vector<Session*> all;
  std::vector<Ref> refs;
  for (size_t i = 0; i < in.size(); ++i)
    for (size_t k = 0; k < in[i].profile.sessions.size(); ++k) {
      all.push_back(&in[i].profile.sessions[k]);
      refs.push_back({i, k});
    }
  if (o.align == ClockAlign::kStart) align_starts(all);
  std::vector<size_t> order(all.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key_of(*all[a]) < key_of(*all[b]); });

  std::vector<std::map<int64_t, int64_t>> new_id(in.size());  // per input: old session id -> new
  Profile out;
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const Ref r = refs[order[pos]];
    Session s = std::move(in[r.input].profile.sessions[r.index]);
    new_id[r.input][s.id] = int64_t(pos + 1);
    s.id = int64_t(pos + 1);
    out.sessions.push_back(std::move(s));
  }
  // The rest, grouped by new session id (stable: each session's own order is kept).
  auto remap = [&](auto items, auto& dest) {
    for (size_t i = 0; i < in.size(); ++i)
      for (auto& item : items(in[i].profile)) {
        auto it = new_id[i].find(item.session_id);
        if (it == new_id[i].end()) continue;  // a row of no session (a damaged file): nothing to keep it with
        item.session_id = it->second;
        dest.push_back(std::move(item));
      }
    std::stable_sort(dest.begin(), dest.end(), [](const auto& a, const auto& b) { return a.session_id < b.session_id; });
  };
  remap([](Profile& p) -> auto& { return p.tables; }, out.tables);
  for (auto& t : out.tables) t.id = 0;  // the store numbers them in this order
  remap([](Profile& p) -> auto& { return p.ties; }, out.ties);
  remap([](Profile& p) -> auto& { return p.memory_events; }, out.memory_events);
  remap([](Profile& p) -> auto& { return p.kernels; }, out.kernels);
  remap([](Profile& p) -> auto& { return p.ranges; }, out.ranges);
  remap([](Profile& p) -> auto& { return p.weights; }, out.weights);
  for (auto& w : out.weights) w.revision = 0;
  merge_metadata(in, new_id, out.metadata);

  // The summary.
  std::set<int64_t> ranks;
  std::set<std::string> hosts, keys;
  std::map<std::string, int64_t> host_first;
  for (const auto& s : out.sessions) {
    if (s.rank) ranks.insert(*s.rank);
    hosts.insert(s.host);
    if (auto k = job_key(s.identity); !k.empty()) keys.insert(k);
    if (s.start_unix_ns == 0) continue;
    auto [it, fresh] = host_first.emplace(s.host, s.start_unix_ns);
    if (!fresh) it->second = std::min(it->second, s.start_unix_ns);
  }
  sum.job = list_keys(keys);
  sum.sessions = out.sessions.size();
  sum.ranks.assign(ranks.begin(), ranks.end());
  sum.hosts.assign(hosts.begin(), hosts.end());
  if (!host_first.empty()) {
    auto [lo, hi] = std::minmax_element(host_first.begin(), host_first.end(),
                                        [](const auto& a, const auto& b) { return a.second < b.second; });
    sum.host_start_spread_ns = hi->second - lo->second;
  }
  if (summary) *summary = std::move(sum);
  return out;
}

}  // namespace edo::model
