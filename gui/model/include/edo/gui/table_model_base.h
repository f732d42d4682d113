// The shared shape of the dashboard's flat item models: fixed columns with headers and
// tooltips, one cell() per subclass, display text plus a sort key per cell.
#pragma once

#include <QAbstractTableModel>
#include <QStringList>
#include <QVariant>

namespace edo::gui {

class TableModelBase : public QAbstractTableModel {
  Q_OBJECT
 public:
  struct Column {
    QString title;
    QString tooltip;
    bool numeric = false;  // right-aligned
  };
  explicit TableModelBase(QList<Column> columns, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 protected:
  virtual int rows() const = 0;
  // Display text, sort key, tooltip... of one cell; QVariant() for roles it does not serve.
  virtual QVariant cell(int row, int column, int role) const = 0;

  // The usual answer of a cell: `display` for DisplayRole, `sort` for SortRole.
  static QVariant answer(int role, const QVariant& display, const QVariant& sort);

 private:
  QList<Column> columns_;
};

}  // namespace edo::gui
