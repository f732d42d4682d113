// EDO_DASHBOARD_TIMING=1: prints "edo-dashboard: first paint after N ms" to stderr the first
// time the window paints while it holds a recording (its outline: with --screenshot the outline
// is painted offscreen when shown, see screenshot.cpp), counted from the process's start (issue 31: first paint < 1 s at
// 10,000 tables; bench/scale/run.sh reads the line).
#pragma once

#include <QObject>

namespace edo::gui {

class MainWindow;

class FirstPaintTimer : public QObject {
 public:
  // Watches every widget of the application; does nothing unless EDO_DASHBOARD_TIMING=1.
  static void install_if_asked();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  bool done_ = false;
};

// Milliseconds since this process started (the kernel's start time, so the loading of Qt's
// libraries before main() counts too); -1 when /proc cannot tell.
double ms_since_process_start();

}  // namespace edo::gui
