// The headless mode: open a recording, show one view, render the window offscreen to a PNG
// and report. What tests and the README's screenshots use.
#pragma once

#include <QSize>
#include <QString>

namespace edo::gui {

struct ScreenshotRequest {
  QString file;
  QString out;
  QString view = QStringLiteral("overview");  // overview|tables|table[:NAME]|kernels|diff:OTHER
  QSize size{1280, 800};
};

// Checks the form of a --view value; an empty string when valid, else why not.
QString check_view_spec(const QString& view);

// Renders and saves; returns 0, or 1 with a one-line reason in *error.
int render_screenshot(const ScreenshotRequest& request, QString* error);

}  // namespace edo::gui
