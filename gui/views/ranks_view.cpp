#include "ranks_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <set>

#include "edo/gui/model_roles.h"
#include "edo/gui/job/ranks_model.h"
#include "share_bar_delegate.h"
#include "sorted_table.h"

namespace edo::gui {

RanksView::RanksView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  ranks_ = new RanksModel(this);
  imbalance_ = new ImbalanceModel(this);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  layout->addWidget(summary_);
  auto* splitter = new QSplitter(Qt::Vertical, this);
  auto* top = new QWidget(splitter);
  auto* top_layout = new QVBoxLayout(top);
  top_layout->setContentsMargins(0, 0, 0, 0);
  top_layout->addWidget(new QLabel(tr("<b>Imbalance per table</b> (the busiest rank against the mean)"), top));
  // Cells without a share draw as usual.
  imbalance_view_ = make_sorted_table(imbalance_, ImbalanceModel::kImbalance, Qt::DescendingOrder, top);
  imbalance_view_->setItemDelegate(new ShareBarDelegate(imbalance_view_));
  imbalance_view_->horizontalHeader()->setSectionResizeMode(ImbalanceModel::kImbalance, QHeaderView::Stretch);
  top_layout->addWidget(imbalance_view_, 1);
  auto* bottom = new QWidget(splitter);
  auto* bottom_layout = new QVBoxLayout(bottom);
  bottom_layout->setContentsMargins(0, 0, 0, 0);
  bottom_layout->addWidget(new QLabel(tr("<b>Ranks</b> (lookups of each table; bars against the busiest rank)"), bottom));
  ranks_view_ = make_sorted_table(ranks_, RanksModel::kRank, Qt::AscendingOrder, bottom);
  ranks_view_->setItemDelegate(new ShareBarDelegate(ranks_view_));
  bottom_layout->addWidget(ranks_view_, 1);
  splitter->addWidget(top);
  splitter->addWidget(bottom);
  layout->addWidget(splitter, 1);
  empty_ = new QLabel(
      tr("No ranks in this recording. A distributed job's ranks appear here when their launcher sets RANK "
         "(torchrun does); record each node with 'edo record' and join the nodes with 'edo merge'."),
      this);
  empty_->setWordWrap(true);
  empty_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  empty_->setStyleSheet(QStringLiteral("color: #555; padding: 16px;"));
  layout->addWidget(empty_, 1);
  setRecording(nullptr);
}

void RanksView::setRecording(RecordingPtr recording) {
  ranks_->setRecording(recording);
  imbalance_->setRecording(recording);
  const bool none = ranks_->rowCount() == 0;
  empty_->setVisible(none);
  summary_->setVisible(!none);
  for (QWidget* w : {static_cast<QWidget*>(imbalance_view_->parentWidget()), static_cast<QWidget*>(ranks_view_->parentWidget())})
    w->setVisible(!none);
  if (none) return;
  std::set<std::string> nodes;
  for (const auto& r : ranks_->ranks()) nodes.insert(r.node);
  const auto& rows = imbalance_->rowsData();
  QString worst;
  if (!rows.empty())
    worst = tr(" Most unbalanced: %1, rank %2 reads %3x the mean.")
                .arg(QString::fromStdString(rows.front().table))
                .arg(rows.front().busiest_rank)
                .arg(rows.front().ratio, 0, 'f', 2);
  summary_->setText(tr("%1 ranks on %2 node(s).%3").arg(ranks_->rowCount()).arg(nodes.size()).arg(worst));
}

}  // namespace edo::gui
