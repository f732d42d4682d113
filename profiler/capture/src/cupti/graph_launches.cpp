#include "graph_launches.h"

namespace edo::capture {

template <class Map, class Key>
void GraphLaunches::remember(Map& map, std::deque<Key>& order, const Key& key) {
  order.push_back(key);
  while (order.size() > limit_) {
    if (map.erase(order.front())) ++forgotten_;
    order.pop_front();
  }
}

void GraphLaunches::captured_launch(uint64_t capture_id, Kernel k) {
  std::lock_guard<std::mutex> lk(mu_);
  auto [it, fresh] = captures_.try_emplace(capture_id);
  if (fresh) remember(captures_, capture_order_, capture_id);
  auto found = captures_.find(capture_id);  // still there unless the limit is 0
  if (found != captures_.end()) found->second.push_back(std::move(k));
}

void GraphLaunches::end_capture(uint64_t capture_id, uint64_t graph) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = captures_.find(capture_id);
  if (it == captures_.end()) return;
  std::vector<Kernel> kernels = std::move(it->second);
  captures_.erase(it);
  if (!graph) return;
  if (graphs_.insert_or_assign(graph, std::move(kernels)).second) remember(graphs_, graph_order_, graph);
}

void GraphLaunches::instantiated(uint64_t graph, uint64_t exec) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = graphs_.find(graph);
  if (it == graphs_.end()) return;
  if (execs_.insert_or_assign(exec, it->second).second) remember(execs_, exec_order_, exec);
}

std::vector<GraphLaunches::Kernel> GraphLaunches::launched(uint64_t exec, uint32_t correlation) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = execs_.find(exec);
  if (it == execs_.end() || it->second.empty()) return {};
  if (pending_.insert_or_assign(correlation, it->second).second) remember(pending_, pending_order_, correlation);
  return it->second;
}

std::vector<std::string> GraphLaunches::take(uint32_t correlation, const std::string& name) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = pending_.find(correlation);
  if (it == pending_.end()) return {};
  auto& kernels = it->second;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (kernels[i].name != name) continue;
    std::vector<std::string> tables = std::move(kernels[i].tables);
    kernels.erase(kernels.begin() + long(i));
    if (kernels.empty()) pending_.erase(it);  // its order entry goes when it reaches the front
    return tables;
  }
  return {};
}

uint64_t GraphLaunches::forgotten() const {
  std::lock_guard<std::mutex> lk(mu_);
  return forgotten_;
}

}  // namespace edo::capture
