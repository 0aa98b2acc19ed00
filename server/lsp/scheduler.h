// AnalysisScheduler: when the language server analyses (as clangd's TUScheduler decides when its
// workers rebuild). One worker thread runs the session's analysis whenever one is requested;
// requests coalesce into one pending flag (and a force flag); each run gets a fresh CancelToken
// that a newer request cancels; an optional watch thread (trace discovery without client file
// watchers) sleeps through Pause. BlockUntilIdleForTest waits until nothing is pending or running.
// Used by the Session (session.h, session_analysis.cpp). Lock order: mu_ is a leaf: it is never
// held while the run or the watch function is called, nor while anything else is locked.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "analysis/base/cancel.h"

namespace ttap::lsp {

class AnalysisScheduler {
 public:
  // One analysis; |force|: even when the newest trace is the one shown. Returns true when it must
  // run again at once (a trace still being written, or a broken one passed over).
  using RunFn = std::function<bool(bool force, const CancelToken& cancel)>;
  // The watch thread's body: loops until Pause returns false.
  using WatchFn = std::function<void()>;

  ~AnalysisScheduler() { Stop(); }
  // Starts the worker (and the watch thread when |watch| is set); a second call does nothing.
  void Start(RunFn run, WatchFn watch);
  // Cancels the run in flight and joins both threads.
  void Stop();

  // Asks for a run; |force| also cancels the run in flight (new settings make it pointless).
  void Request(bool force);
  // Asks for a run because |trace| (at |mtime|) appeared or changed; cancels the run in flight
  // unless it is already on that trace.
  void RequestTrace(const std::string& trace, int64_t mtime);
  // The run says which trace it analyses (RequestTrace compares with it).
  void SetInFlight(const std::string& trace, int64_t mtime);
  bool AnalysingTrace() const;  // a run in flight has named its trace (SetInFlight)

  // Waits |ms| unless the scheduler stops; false when it stops or |cancel| is set.
  bool Pause(int ms, const CancelToken& cancel);
  bool stopping() const;
  // Waits until nothing is pending or in flight (or the scheduler stops); false on timeout.
  bool BlockUntilIdleForTest(std::chrono::milliseconds timeout);

 private:
  void WorkerLoop();

  RunFn run_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool pending_ = false, force_ = false, stopping_ = false;
  CancelToken in_flight_;  // cancellable while a run is in flight
  std::string in_flight_trace_;
  int64_t in_flight_mtime_ = -1;
  std::thread worker_, watcher_;
};

}  // namespace ttap::lsp
