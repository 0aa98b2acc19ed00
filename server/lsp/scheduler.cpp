// AnalysisScheduler (scheduler.h): the worker loop, requests, cancellation and idle waits.
#include "server/lsp/scheduler.h"

namespace ttap::lsp {

void AnalysisScheduler::Start(RunFn run, WatchFn watch) {
  if (worker_.joinable()) return;
  run_ = std::move(run);
  worker_ = std::thread([this] { WorkerLoop(); });
  if (watch) watcher_ = std::thread(std::move(watch));
}

void AnalysisScheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    in_flight_.Cancel();
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (watcher_.joinable()) watcher_.join();
}

void AnalysisScheduler::Request(bool force) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_ = true;
  force_ = force_ || force;
  // Hovers keep reading the previous snapshot while the pending run replaces it.
  if (force) in_flight_.Cancel();
  cv_.notify_all();
}

void AnalysisScheduler::RequestTrace(const std::string& trace, int64_t mtime) {
  std::lock_guard<std::mutex> lock(mu_);
  if (trace == in_flight_trace_ && mtime == in_flight_mtime_) return;  // already on it
  pending_ = true;
  // A newer trace than the one being analysed: that analysis is pointless now.
  if (!in_flight_trace_.empty()) in_flight_.Cancel();
  cv_.notify_all();
}

void AnalysisScheduler::SetInFlight(const std::string& trace, int64_t mtime) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_trace_ = trace;
  in_flight_mtime_ = mtime;
}

bool AnalysisScheduler::AnalysingTrace() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !in_flight_trace_.empty();
}

bool AnalysisScheduler::Pause(int ms, const CancelToken& cancel) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return stopping_; });
  return !stopping_ && !cancel.cancelled();
}

bool AnalysisScheduler::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

bool AnalysisScheduler::BlockUntilIdleForTest(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout,
                      [&] { return stopping_ || (!pending_ && !in_flight_.cancellable()); });
}

void AnalysisScheduler::WorkerLoop() {
  while (true) {
    bool force;
    CancelToken cancel;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return pending_ || stopping_; });
      if (stopping_) return;
      pending_ = false;
      force = force_;
      force_ = false;
      in_flight_ = cancel = CancelToken::Cancellable();
    }
    const bool again = run_(force, cancel);
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_ = pending_ || again;
      in_flight_trace_.clear();
      in_flight_mtime_ = -1;
      in_flight_ = CancelToken();
    }
    cv_.notify_all();  // BlockUntilIdleForTest
  }
}

}  // namespace ttap::lsp
