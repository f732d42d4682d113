// edo-dashboard: the Qt desktop dashboard over .edodb recordings.
//
//   edo-dashboard [FILE] [--compare OTHER]                         the window
//   edo-dashboard FILE --screenshot OUT.png [--view V] [--size WxH]  one view rendered offscreen
//
// Exit codes: 0 success, 1 runtime failure (one line on stderr), 2 usage error.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QRegularExpression>
#include <QThreadPool>
#include <QtGlobal>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "first_paint_timer.h"
#include "main_window.h"
#include "screenshot.h"

namespace {

int usage_error(const QString& message) {
  std::fprintf(stderr, "edo-dashboard: %s (see 'edo-dashboard --help')\n", qPrintable(message));
  return 2;
}

// Qt's platform plugins print lines that say nothing to a user (the offscreen plugin cannot
// resize to hints; no XDG runtime dir in a container); everything else goes to stderr.
void quiet_message_handler(QtMsgType type, const QMessageLogContext& context, const QString& message) {
  if (type == QtDebugMsg || type == QtInfoMsg) return;
  if (message.contains(QLatin1String("propagateSizeHints")) || message.contains(QLatin1String("XDG_RUNTIME_DIR"))) return;
  std::fprintf(stderr, "edo-dashboard: %s\n", qPrintable(message));
  if (type == QtFatalMsg) std::abort();
  (void)context;
}

}  // namespace

int main(int argc, char** argv) {
  // Parse before any QApplication exists: usage errors and --help need no display, and the
  // platform (offscreen for --screenshot) must be chosen before the application is made.
  QCoreApplication::setOrganizationName(QStringLiteral("edo"));
  QCoreApplication::setApplicationName(QStringLiteral("edo-dashboard"));
  QCoreApplication::setApplicationVersion(QStringLiteral(EDO_VERSION));
  QStringList arguments;
  for (int i = 0; i < argc; ++i) arguments << QString::fromLocal8Bit(argv[i]);

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral(
      "edo dashboard: look at an .edodb recording (memory per table, access skew, cache curves, kernels, diffs).\n"
      "Record one with 'edo record -o run.edodb -- python3 train.py' or 'edo synth -o demo.edodb'."));
  QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")}, QStringLiteral("show this help and exit"));
  QCommandLineOption version({QStringLiteral("v"), QStringLiteral("version")}, QStringLiteral("show the version and exit"));
  parser.addPositionalArgument(QStringLiteral("file"), QStringLiteral("the recording to open (.edodb)"), QStringLiteral("[FILE]"));
  QCommandLineOption compare(QStringLiteral("compare"), QStringLiteral("also open OTHER in the Diff view, as the recording before (FILE is after)"), QStringLiteral("OTHER"));
  QCommandLineOption screenshot(QStringLiteral("screenshot"), QStringLiteral("render one view to a PNG without a display, then exit"), QStringLiteral("OUT.png"));
  QCommandLineOption view(QStringLiteral("view"),
                          QStringLiteral("the view to render: overview, tables, table:NAME, kernels, ranks, tuner or diff:OTHER (OTHER before, FILE after; default overview)"),
                          QStringLiteral("VIEW"), QStringLiteral("overview"));
  QCommandLineOption size(QStringLiteral("size"), QStringLiteral("window size for --screenshot (default 1280x800)"), QStringLiteral("WxH"),
                          QStringLiteral("1280x800"));
  parser.addOptions({help, version, compare, screenshot, view, size});
  if (!parser.parse(arguments)) return usage_error(parser.errorText());
  if (parser.isSet(help)) {
    // Without an application object Qt names the program "<executable_name>"; say its name.
    QString text = parser.helpText();
    text.replace(QStringLiteral("<executable_name>"), QCoreApplication::applicationName());
    std::fputs(qPrintable(text), stdout);
    return 0;
  }
  if (parser.isSet(version)) {
    std::printf("edo-dashboard %s\n", EDO_VERSION);
    return 0;
  }
  const QStringList files = parser.positionalArguments();
  if (files.size() > 1) return usage_error(QStringLiteral("one recording at a time (got %1 files; use --compare for a second)").arg(files.size()));

  if (parser.isSet(screenshot)) {
    if (files.isEmpty()) return usage_error(QStringLiteral("--screenshot needs a recording: edo-dashboard FILE --screenshot OUT.png"));
    edo::gui::ScreenshotRequest request;
    request.file = files.front();
    request.out = parser.value(screenshot);
    request.view = parser.value(view);
    const QString bad_view = edo::gui::check_view_spec(request.view);
    if (!bad_view.isEmpty()) return usage_error(bad_view);
    const auto match = QRegularExpression(QStringLiteral("^(\\d{3,5})x(\\d{3,5})$")).match(parser.value(size));
    if (!match.hasMatch()) return usage_error(QStringLiteral("--size '%1' is not WIDTHxHEIGHT (e.g. 1280x800)").arg(parser.value(size)));
    request.size = QSize(match.captured(1).toInt(), match.captured(2).toInt());
    if (request.size.width() < 800 || request.size.height() < 500 || request.size.width() > 8000 || request.size.height() > 8000)
      return usage_error(QStringLiteral("--size %1 is outside 800x500 .. 8000x8000").arg(parser.value(size)));

    // The headless mode needs no display.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication::setAttribute(Qt::AA_Use96Dpi);  // the same pixels on every machine
    if (qEnvironmentVariableIsEmpty("EDO_QT_DEBUG")) qInstallMessageHandler(quiet_message_handler);
    QApplication app(argc, argv);
    edo::gui::FirstPaintTimer::install_if_asked();
    QString error;
    const int rc = edo::gui::render_screenshot(request, &error);
    QThreadPool::globalInstance()->waitForDone();
    if (rc != 0) std::fprintf(stderr, "edo-dashboard: %s\n", qPrintable(error));
    return rc;
  }
  if (parser.isSet(view) || parser.isSet(size)) return usage_error(QStringLiteral("--view and --size go with --screenshot"));

  // The window needs a display, and Qt aborts without one: say it in one line first.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY") &&
      qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
    std::fprintf(stderr,
                 "edo-dashboard: no display (DISPLAY and WAYLAND_DISPLAY are unset); run it in a desktop session "
                 "(or ssh -X), or render a view to a file with --screenshot OUT.png\n");
    return 1;
  }
  if (qEnvironmentVariableIsEmpty("EDO_QT_DEBUG")) qInstallMessageHandler(quiet_message_handler);
  QApplication app(argc, argv);
  edo::gui::FirstPaintTimer::install_if_asked();
  int rc;
  {
    edo::gui::MainWindow window;
    window.show();
    if (!files.isEmpty()) window.openFile(files.front());
    if (parser.isSet(compare)) window.compareWith(parser.value(compare));
    rc = QApplication::exec();
  }
  QThreadPool::globalInstance()->waitForDone();
  return rc;
}
