// Runs a computation on the thread pool and hands its result to a callback on the thread of
// `receiver` (the UI thread for widgets), unless `receiver` is destroyed first.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QtConcurrent/QtConcurrentRun>

#include <functional>
#include <utility>

namespace edo::gui {

// `work` must not throw (return an error value instead): QtConcurrent cannot carry standard
// exceptions across threads.
template <class Result>
void run_in_background(QObject* receiver, std::function<Result()> work, std::function<void(Result)> done) {
  auto* watcher = new QFutureWatcher<Result>(receiver);
  QObject::connect(watcher, &QFutureWatcher<Result>::finished, receiver, [watcher, done = std::move(done)] {
    done(watcher->result());
    watcher->deleteLater();
  });
  watcher->setFuture(QtConcurrent::run(std::move(work)));
}

}  // namespace edo::gui
