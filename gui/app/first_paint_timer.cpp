#include "first_paint_timer.h"

#include <QApplication>
#include <QEvent>
#include <QWidget>
#include <QtGlobal>

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "main_window.h"

namespace edo::gui {

double ms_since_process_start() {
  // Field 22 of /proc/self/stat: the start time in clock ticks since boot. The command name
  // (field 2) may hold spaces and parentheses: the fields after it follow the last ')'.
  std::ifstream in("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1.0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  unsigned long long start_ticks = 0;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) start_ticks = std::stoull(field);
  const long hz = sysconf(_SC_CLK_TCK);
  timespec now{};
  if (start_ticks == 0 || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0) return -1.0;
  const double now_ms = static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
  return now_ms - static_cast<double>(start_ticks) * 1e3 / static_cast<double>(hz);
}

void FirstPaintTimer::install_if_asked() {
  if (qEnvironmentVariable("EDO_DASHBOARD_TIMING") != QLatin1String("1")) return;
  qApp->installEventFilter(new FirstPaintTimer);  // lives as long as the application
}

bool FirstPaintTimer::eventFilter(QObject* watched, QEvent* event) {
  if (done_ || event->type() != QEvent::Paint) return false;
  auto* widget = qobject_cast<QWidget*>(watched);
  auto* window = widget ? qobject_cast<MainWindow*>(widget->window()) : nullptr;
  if (!window || !window->recording()) return false;  // the empty window before the file is read
  done_ = true;
  std::fprintf(stderr, "edo-dashboard: first paint after %.0f ms\n", ms_since_process_start());
  return false;
}

}  // namespace edo::gui
