#include "edo/gui/diff/recording_diff.h"

#include <QObject>

#include <map>

#include "edo/gui/tables/table_fields.h"

namespace edo::gui {

const std::vector<DiffMetric>& diff_metrics() {
  static const std::vector<DiffMetric> metrics = {
      {"total_bytes", QObject::tr("Bytes"), false, [](const model::TableView& t) { return static_cast<double>(total_bytes(t)); }},
      {"weight_bytes", QObject::tr("Weights"), false, [](const model::TableView& t) { return static_cast<double>(weight_bytes(t)); }},
      {"optimizer_bytes", QObject::tr("Optimizer"), false, [](const model::TableView& t) { return static_cast<double>(optimizer_bytes(t)); }},
      {"grad_bytes", QObject::tr("Grads"), false, [](const model::TableView& t) { return static_cast<double>(grad_bytes(t)); }},
      {"lookups", QObject::tr("Lookups"), false, [](const model::TableView& t) { return static_cast<double>(lookups(t)); }},
      {"unique_rows", QObject::tr("Unique rows"), false, [](const model::TableView& t) { return static_cast<double>(t.summary.unique_rows); }},
      {"coverage_top_1pct", QObject::tr("Top 1%"), true, [](const model::TableView& t) { return t.summary.coverage_top_1pct; }},
      {"coverage_top_10pct", QObject::tr("Top 10%"), true, [](const model::TableView& t) { return t.summary.coverage_top_10pct; }},
      {"lru_hit_rate_1pct", QObject::tr("LRU 1%"), true, [](const model::TableView& t) { return t.summary.lru_hit_rate_1pct; }},
      {"lru_hit_rate_10pct", QObject::tr("LRU 10%"), true, [](const model::TableView& t) { return t.summary.lru_hit_rate_10pct; }},
      {"lru_hit_rate_50pct", QObject::tr("LRU 50%"), true, [](const model::TableView& t) { return t.summary.lru_hit_rate_50pct; }},
  };
  return metrics;
}

namespace {
QString shape_of(const model::TableView& t) {
  return QStringLiteral("%1 x %2 %3").arg(t.rows).arg(t.dim).arg(QString::fromStdString(t.dtype));
}
std::vector<double> values_of(const model::TableView& t) {
  std::vector<double> v;
  for (const auto& m : diff_metrics()) v.push_back(m.get(t));
  return v;
}
}  // namespace

RecordingDiff diff_recordings(const Recording& before, const Recording& after) {
  RecordingDiff d;
  d.before_path = before.path;
  d.after_path = after.path;
  d.peak_before = before.peak_bytes;
  d.peak_after = after.peak_bytes;
  d.memory_before = before.table_memory;
  d.memory_after = after.table_memory;
  d.loss_before = build_loss_curve(before.profile);
  d.loss_after = build_loss_curve(after.profile);
  std::map<std::string, const model::TableView*> in_a, in_b;
  for (const auto& t : before.tables) in_a[t.name] = &t;
  for (const auto& t : after.tables) in_b[t.name] = &t;
  std::vector<TableDiff> only_before, only_after;
  for (const auto& [name, a] : in_a) {
    TableDiff td;
    td.name = name;
    td.shape_before = shape_of(*a);
    td.before = values_of(*a);
    auto it = in_b.find(name);
    if (it == in_b.end()) {
      td.status = TableDiff::Status::kOnlyBefore;
      only_before.push_back(std::move(td));
      continue;
    }
    td.shape_after = shape_of(*it->second);
    td.after = values_of(*it->second);
    d.tables.push_back(std::move(td));
  }
  for (const auto& [name, b] : in_b) {
    if (in_a.count(name)) continue;
    TableDiff td;
    td.name = name;
    td.status = TableDiff::Status::kOnlyAfter;
    td.shape_after = shape_of(*b);
    td.after = values_of(*b);
    only_after.push_back(std::move(td));
  }
  for (auto& t : only_before) d.tables.push_back(std::move(t));
  for (auto& t : only_after) d.tables.push_back(std::move(t));
  return d;
}

}  // namespace edo::gui
