#include "tables_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

#include "edo/gui/model_roles.h"
#include "edo/gui/tables/tables_model.h"

namespace edo::gui {

TablesView::TablesView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout();
  filter_ = new QLineEdit(this);
  filter_->setPlaceholderText(tr("Filter tables by name (e.g. sparse or emb.*user)"));
  filter_->setClearButtonEnabled(true);
  count_ = new QLabel(this);
  bar->addWidget(filter_, 1);
  bar->addWidget(count_);
  layout->addLayout(bar);

  model_ = new TablesModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(SortRole);
  proxy_->setFilterKeyColumn(TablesModel::kName);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  table_ = new QTableView(this);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(TablesModel::kBytes, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  // Column widths from the first rows only: measuring thousands of cells on every change stalls the UI.
  table_->horizontalHeader()->setResizeContentsPrecision(64);
  // Names as wide as they need (160..320 px), the spare width to the last column.
  table_->horizontalHeader()->setSectionResizeMode(TablesModel::kName, QHeaderView::Interactive);
  table_->horizontalHeader()->setStretchLastSection(true);
  layout->addWidget(table_);

  connect(filter_, &QLineEdit::textChanged, this, &TablesView::setFilter);
  connect(table_, &QTableView::doubleClicked, this,
          [this](const QModelIndex& index) { Q_EMIT openTable(index.data(TableNameRole).toString()); });
  connect(proxy_, &QAbstractItemModel::modelReset, this, &TablesView::updateCount);
  connect(proxy_, &QAbstractItemModel::rowsInserted, this, &TablesView::updateCount);
  connect(proxy_, &QAbstractItemModel::rowsRemoved, this, &TablesView::updateCount);
  updateCount();
}

void TablesView::setRecording(RecordingPtr recording) {
  // Another file starts at the left edge (the name column in sight) and the top; the second
  // stage of the same file (statistics) keeps where the user scrolled to.
  const QString path = recording ? recording->path : QString();
  const bool another_file = path != shown_path_;
  shown_path_ = path;
  model_->setRecording(std::move(recording));
  if (another_file) {
    table_->horizontalScrollBar()->setValue(0);
    table_->scrollToTop();
  }
  table_->resizeColumnToContents(TablesModel::kName);
  table_->setColumnWidth(TablesModel::kName, std::clamp(table_->columnWidth(TablesModel::kName), 160, 320));
  const bool parts = model_->hasMemoryParts();
  for (int column : {TablesModel::kWeights, TablesModel::kOptimizer, TablesModel::kGrads}) table_->setColumnHidden(column, !parts);
  updateCount();
}

void TablesView::setFilter(const QString& text) {
  if (filter_->text() != text) filter_->setText(text);
  // A plain word matches anywhere in the name; * and ? are wildcards.
  proxy_->setFilterWildcard(text.contains(QLatin1Char('*')) || text.contains(QLatin1Char('?')) ? text
                                                                                                : QLatin1Char('*') + text + QLatin1Char('*'));
  updateCount();
}

void TablesView::updateCount() {
  const int all = model_->rowCount(), shown = proxy_->rowCount();
  const QString tables = all == 1 ? tr("1 table") : tr("%1 tables").arg(all);
  count_->setText(shown == all ? tables : tr("%1 of %2").arg(shown).arg(tables));
}

}  // namespace edo::gui
