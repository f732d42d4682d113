// The processes whose streams make a table's union LRU curve. See union_view.h.
#include "edo/model/union_view.h"

#include <map>
#include <string>

namespace edo::model {

std::optional<stats::UnionLru> union_lru_of(const Profile& profile, const std::vector<size_t>& members,
                                            const stats::TableAggregate& merged) {
  std::map<int64_t, const Session*> session_of;
  for (const Session& s : profile.sessions) session_of[s.id] = &s;
  std::map<int64_t, std::vector<const Table*>> by_rank;  // ranks that read the table: their tables
  std::vector<const Session*> rankless;                  // processes without RANK that read it
  for (size_t i : members) {
    const Table& t = profile.tables[i];
    if (t.aggregate.lookups() == 0) continue;  // registered (or inherited) and never read
    auto it = session_of.find(t.session_id);
    const Session* s = it == session_of.end() ? nullptr : it->second;
    if (s && s->rank) by_rank[*s->rank].push_back(&t);
    else rankless.push_back(s);
  }
  if (by_rank.size() < 2) return std::nullopt;
  stats::UnionLru none;
  none.ranks = by_rank.size();
  none.lookups = merged.lookups();
  if (!rankless.empty()) {
    const Session* s = rankless.front();
    none.why_not = (s ? "process " + std::to_string(s->pid) + " on " + s->host : std::string("a process not recorded")) +
                   " read the table without a RANK: its lookups belong to no rank's stream";
    return none;
  }
  std::vector<stats::RankSample> ranks;
  for (const auto& [rank, tables] : by_rank) {
    if (tables.size() > 1) {
      none.why_not = "rank " + std::to_string(rank) + "'s lookups of the table come from " + std::to_string(tables.size()) +
                     " processes (forked workers): not one stream's order";
      return none;
    }
    ranks.push_back({rank, tables.front()->aggregate.ordered_sample()});
  }
  return stats::union_lru(ranks, merged);
}

void add_union_lru(const Profile& profile, std::vector<TableView>& views, const std::vector<std::string>& view_of_table) {
  std::map<std::string, std::vector<size_t>> members;  // view name -> its tables
  for (size_t i = 0; i < profile.tables.size() && i < view_of_table.size(); ++i) members[view_of_table[i]].push_back(i);
  for (TableView& v : views) {
    if (v.ranks.size() < 2) continue;  // fewer than two ranks recorded it
    auto it = members.find(v.name);
    if (it != members.end()) v.union_lru = union_lru_of(profile, it->second, v.aggregate);
  }
}

}  // namespace edo::model
