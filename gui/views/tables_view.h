// Tables: every table, sortable by any column and filtered by name; double-click opens the
// table's detail.
#pragma once

#include <QWidget>

#include "edo/gui/recording/recording.h"

class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace edo::gui {

class TablesModel;

class TablesView : public QWidget {
  Q_OBJECT
 public:
  explicit TablesView(QWidget* parent = nullptr);
  void setRecording(RecordingPtr recording);
  void setFilter(const QString& text);
  QTableView* table() const { return table_; }
  TablesModel* model() const { return model_; }

 Q_SIGNALS:
  void openTable(const QString& name);

 private:
  void updateCount();

  TablesModel* model_;
  QSortFilterProxyModel* proxy_;
  QLineEdit* filter_;
  QLabel* count_;
  QTableView* table_;
  QString shown_path_;  // the file whose tables are shown
};

}  // namespace edo::gui
