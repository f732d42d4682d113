#include "kernels_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "edo/gui/job/kernels_model.h"
#include "edo/gui/model_roles.h"
#include "share_bar_delegate.h"
#include "sorted_table.h"

namespace edo::gui {

namespace {

QLabel* make_empty_label(const QString& text, QWidget* parent) {
  auto* label = new QLabel(text, parent);
  label->setWordWrap(true);
  label->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  label->setStyleSheet(QStringLiteral("color: #555; padding: 16px;"));
  return label;
}

}  // namespace

KernelsView::KernelsView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* splitter = new QSplitter(Qt::Vertical, this);
  kernels_ = new KernelsModel(this);
  ranges_ = new RangesModel(this);

  auto* top = new QWidget(splitter);
  auto* top_layout = new QVBoxLayout(top);
  top_layout->setContentsMargins(0, 0, 0, 0);
  top_layout->addWidget(new QLabel(tr("<b>GPU kernels by GPU time</b>"), top));
  kernels_view_ = make_sorted_table(kernels_, KernelsModel::kTime, Qt::DescendingOrder, top);
  kernels_view_->horizontalHeader()->setSectionResizeMode(KernelsModel::kTables, QHeaderView::Stretch);
  kernels_view_->setItemDelegateForColumn(KernelsModel::kShare, new ShareBarDelegate(kernels_view_));
  kernels_view_->horizontalHeader()->setSectionResizeMode(KernelsModel::kName, QHeaderView::Interactive);
  kernels_view_->horizontalHeader()->resizeSection(KernelsModel::kName, 380);
  kernels_empty_ = make_empty_label(
      tr("No GPU kernels in this recording. Kernels are captured with CUPTI when the job runs on a CUDA device "
         "under 'edo record'."),
      top);
  top_layout->addWidget(kernels_view_, 1);
  top_layout->addWidget(kernels_empty_, 1);

  auto* bottom = new QWidget(splitter);
  auto* bottom_layout = new QVBoxLayout(bottom);
  bottom_layout->setContentsMargins(0, 0, 0, 0);
  bottom_layout->addWidget(new QLabel(tr("<b>NVTX ranges</b>"), bottom));
  ranges_view_ = make_sorted_table(ranges_, RangesModel::kTime, Qt::DescendingOrder, bottom);
  ranges_view_->horizontalHeader()->setSectionResizeMode(RangesModel::kName, QHeaderView::Stretch);
  ranges_empty_ = make_empty_label(
      tr("No NVTX ranges in this recording. Ranges are recorded when the job annotates its code with NVTX "
         "(torch.cuda.nvtx.range_push, nvtxRangePushA) under 'edo record'."),
      bottom);
  bottom_layout->addWidget(ranges_view_, 1);
  bottom_layout->addWidget(ranges_empty_, 1);
  splitter->addWidget(top);
  splitter->addWidget(bottom);
  layout->addWidget(splitter);
  setRecording(nullptr);
}

void KernelsView::setRecording(RecordingPtr recording) {
  kernels_->setRecording(recording);
  ranges_->setRecording(recording);
  const bool no_kernels = kernels_->rowCount() == 0, no_ranges = ranges_->rowCount() == 0;
  kernels_view_->setVisible(!no_kernels);
  kernels_empty_->setVisible(no_kernels);
  ranges_view_->setVisible(!no_ranges);
  ranges_empty_->setVisible(no_ranges);
}

}  // namespace edo::gui
