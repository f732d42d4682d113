// Delivering a background job's results to the UI thread (private to gui/model).
#pragma once

#include <QCoreApplication>
#include <QMetaObject>

#include <memory>
#include <utility>

namespace edo::gui {

// A function that runs fn(owner) on the application object's thread (the UI thread, which
// owns the job's owner), and drops it there when the job was abandoned or the owner is gone by
// then. Job has `abandoned` (an atomic bool) and `owner` (a QPointer).
template <class Job>
auto ui_thread_poster(std::shared_ptr<Job> job) {
  return [job](auto fn) {
    QMetaObject::invokeMethod(
        QCoreApplication::instance(),
        [job, fn = std::move(fn)]() mutable {
          if (job->abandoned || !job->owner) return;
          fn(job->owner.data());
        },
        Qt::QueuedConnection);
  };
}

}  // namespace edo::gui
