// AnalysisScheduler: when the language server analyses (as clangd's TUScheduler decides when its
// workers rebuild). One worker thread runs the session's analysis whenever one is requested;
// requests coalesce into one pending flag (and a force flag); each run gets a fresh CancelToken
// that a newer request cancels; an optional watch thread (trace discovery without client file
// watchers) sleeps through Pause. BlockUntilIdleForTest waits until nothing is pending or running.
// It owns what the runs leave (AnalysisState, snapshot.h: the snapshot shown, the findings' moved
// lines, the trace choice), which the session's features read as a view (View, LockState).
// Used by the Session (session.h, session_analysis.cpp). Lock order: mu_ is a leaf: it is never
// held while the run or the watch function is called, nor while anything else is locked;
// state_mu_ comes after the session's documents lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "analysis/base/cancel.h"
#include "server/lsp/snapshot.h"

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

  // The analysis state (snapshot.h), locked while the returned handle lives.
  class LockedState {
   public:
    explicit LockedState(AnalysisScheduler* s) : lock_(s->state_mu_), state_(&s->state_) {}
    AnalysisState* operator->() const { return state_; }
    AnalysisState& operator*() const { return *state_; }

   private:
    std::unique_lock<std::mutex> lock_;
    AnalysisState* state_;
  };
  LockedState LockState() { return LockedState(this); }
  // The snapshot shown, as a read-only view for the features (null when none).
  std::shared_ptr<const Snapshot> View() { return LockState()->snapshot; }

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
  // The analysis state; state_mu_ is taken after the session's documents lock (an edit moves
  // the findings' lines), never before it, and never while mu_ is held.
  std::mutex state_mu_;
  AnalysisState state_;
};

}  // namespace ttap::lsp
