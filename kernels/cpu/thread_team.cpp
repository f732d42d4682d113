#include "cpu/thread_team.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "edo/kernels/strategy.h"

namespace edo::kernels::cpu {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

// Spin on `a` until it differs from `old` for about 20 us, then sleep on it.
template <class T>
void wait_change(const std::atomic<T>& a, T old) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0;; ++i) {
    if (a.load(std::memory_order_acquire) != old) return;
    cpu_relax();
    if ((i & 255) == 255 && std::chrono::steady_clock::now() - t0 > std::chrono::microseconds(20)) break;
  }
  while (a.load(std::memory_order_acquire) == old) a.wait(old, std::memory_order_acquire);
}

class Team {
 public:
  ~Team() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_.store(true, std::memory_order_relaxed);
      gen_.fetch_add(1, std::memory_order_release);
      gen_.notify_all();
    }
    for (auto& t : workers_) t.join();
  }

  void run(int threads, TeamFn fn, void* ctx) {
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock() || threads <= 1) {
      fn(ctx, 0, 1);
      return;
    }
    grow(threads - 1);
    fn_.store(fn, std::memory_order_relaxed);
    ctx_.store(ctx, std::memory_order_relaxed);
    active_.store(threads, std::memory_order_relaxed);
    pending_.store(threads - 1, std::memory_order_relaxed);
    gen_.fetch_add(1, std::memory_order_release);
    gen_.notify_all();
    fn(ctx, 0, threads);
    int p;
    while ((p = pending_.load(std::memory_order_acquire)) != 0) wait_change(pending_, p);
  }

  void pin(int threads) {
    const std::vector<int>& cpus = allowed_cpus();
    if (cpus.empty()) return;
    struct Ctx {
      const std::vector<int>* cpus;
    } ctx{&cpus};
    run(threads, [](void* c, int t, int) {
      auto& v = *static_cast<Ctx*>(c)->cpus;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(v[static_cast<std::size_t>(t) % v.size()], &one);
      pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    }, &ctx);
  }

 private:
  void grow(int n) {
    while (static_cast<int>(workers_.size()) < n) {
      const int id = static_cast<int>(workers_.size()) + 1;
      const unsigned g = gen_.load(std::memory_order_acquire);  // the next job is g + 1
      workers_.emplace_back([this, id, g] { loop(id, g); });
    }
  }
  void loop(int id, unsigned seen) {
    for (;;) {
      wait_change(gen_, seen);
      // Read the job consistently with its generation (a worker left out of the previous
      // job may wake while the next one is being published).
      unsigned g;
      TeamFn f;
      void* c;
      int a;
      for (;;) {
        g = gen_.load(std::memory_order_acquire);
        f = fn_.load(std::memory_order_relaxed);
        c = ctx_.load(std::memory_order_relaxed);
        a = active_.load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (gen_.load(std::memory_order_relaxed) == g) break;
      }
      seen = g;
      if (stop_.load(std::memory_order_relaxed)) return;
      if (id < a) {
        f(c, id, a);
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_all();
      }
    }
  }

  std::mutex mu_;
  std::vector<std::thread> workers_;
  std::atomic<unsigned> gen_{0};
  std::atomic<int> pending_{0};
  std::atomic<TeamFn> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  std::atomic<int> active_{0};
  std::atomic<bool> stop_{false};
};

Team& team() {
  static Team t;
  return t;
}

}  // namespace

const std::vector<int>& allowed_cpus() {
  static const std::vector<int> cpus = [] {
    std::vector<int> v;
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof(mask), &mask) == 0)
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &mask)) v.push_back(c);
    return v;
  }();
  return cpus;
}

void team_run(int threads, TeamFn fn, void* ctx) { team().run(threads, fn, ctx); }
void team_pin(int threads) { team().pin(threads); }

void pin_threads() {
  const std::vector<int>& cpus = allowed_cpus();
  if (cpus.empty()) return;
  team_pin(num_threads());  // the lookup team (calling thread: first CPU)
#pragma omp parallel num_threads(num_threads())
  {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[static_cast<std::size_t>(omp_get_thread_num()) % cpus.size()], &one);
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
  }
}

}  // namespace edo::kernels::cpu
