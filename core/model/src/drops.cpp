#include "edo/model/drops.h"

#include <algorithm>
#include <vector>

namespace edo::model {

const DropCounter* find_drop_counter(const std::string& name) { return drops::find(name); }

std::string describe_drop(const std::string& name, uint64_t n) {
  std::string shown;
  for (unsigned char ch : name) {
    if (ch < 0x20 || ch == 0x7f) {
      static const char* hex = "0123456789abcdef";
      shown += "\\x";
      shown += hex[ch >> 4];
      shown += hex[ch & 15];
    } else {
      shown += char(ch);
    }
  }
  const DropCounter* c = find_drop_counter(name);
  std::string line = shown + ": " + std::to_string(n);
  if (c && c->unit == DropUnit::kSession) line += " session(s)";
  line += c ? " (" + std::string(c->meaning) + ")" : std::string(" (a counter this edo does not know)");
  return line;
}

std::string lifting_settings(const std::map<std::string, uint64_t>& counts) {
  std::string out;
  std::vector<std::string> seen;
  for (const DropCounter& c : drops::kCatalog) {
    if (c.setting.empty()) continue;
    bool lost = false;
    for (const auto& [name, n] : counts) lost = lost || (n > 0 && drops::find(name) == &c);
    if (!lost || std::find(seen.begin(), seen.end(), c.setting) != seen.end()) continue;
    seen.emplace_back(c.setting);
    out += (out.empty() ? "" : " and ") + std::string(c.setting);
  }
  return out;
}

uint64_t dropped_events_of(const std::map<std::string, uint64_t>& counts) {
  uint64_t total = 0;
  for (const auto& [name, n] : counts) {
    const DropCounter* c = find_drop_counter(name);
    if (!c || (c->unit == DropUnit::kEvent && c->severity == drops::Severity::kDataLoss)) total += n;
  }
  return total;
}

}  // namespace edo::model
