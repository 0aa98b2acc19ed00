// The threads of analysis/ and the harness, in one place. ParallelFor: the one way this code base
// spreads independent items over threads (scan's traces, eval's loading and metrics, gen's
// traces, the LLM drafter's findings, the what-ifs' replays). The caller's thread works too;
// items are taken one at a time from a shared counter, so a slow item never holds up the others.
// WorkerGroup: threads that run beside the caller while it produces their work (the loader's
// parsers behind its reader). Header-only; any module may use it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace ttap {

// Calls |fn(i)| once for every i in [0, n) on min(threads, n) threads (at least one: the
// caller's); returns when every call has returned. |fn| must be safe to call concurrently.
template <typename Fn>
void ParallelFor(size_t n, size_t threads, Fn&& fn) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  const size_t helpers = std::min(threads, n) > 1 ? std::min(threads, n) - 1 : 0;
  std::vector<std::thread> pool;
  pool.reserve(helpers);
  for (size_t t = 0; t < helpers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

// Runs |fn(i)| for i in [0, n) on n threads of their own, beside the caller, until Join() (or
// the destructor) waits for them all.
class WorkerGroup {
 public:
  WorkerGroup() = default;
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;
  ~WorkerGroup() { Join(); }
  template <typename Fn>
  void Start(size_t n, Fn fn) {
    for (size_t i = 0; i < n; ++i) threads_.emplace_back(fn, i);
  }
  size_t size() const { return threads_.size(); }
  void Join() {
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  std::vector<std::thread> threads_;
};

// Runs |a| and |b| at once (|b| on a second thread when |threads| > 1, else after |a|).
template <typename A, typename B>
void RunBoth(size_t threads, A&& a, B&& b) {
  ParallelFor(2, threads, [&](size_t i) { i == 0 ? a() : b(); });
}

// The machine's hardware threads, at least 1.
inline size_t HardwareThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace ttap
