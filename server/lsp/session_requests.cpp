// The session's request thread (see session.h): requests and notifications queued in arrival
// order, slow requests on their own threads, coalesced diagnostics publishing, and the check
// that the editor's process is still there. The reader loop (lsp_server.cpp) enqueues.
#include "server/lsp/session.h"

namespace ttap::lsp {

void Session::Enqueue(std::function<void()> run) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (queue_stop_) return;
    queue_.push_back(std::move(run));
  }
  queue_cv_.notify_one();
}

void Session::RequestLoop() {
  while (true) {
    std::function<void()> task;
    std::string due_uri;
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      // Until a task arrives, the earliest publish waiting for a quiet buffer is due, or a second
      // has passed (then the loop checks that the client is still there). The wake-up time is
      // recomputed on every wake: an edit may have queued a publish due sooner.
      const auto poll_until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      auto next_due = [&] {
        auto until = poll_until;
        for (const auto& [u, when] : publish_due_) until = std::min(until, when);
        return until;
      };
      auto is_due = [&] {
        const auto now = std::chrono::steady_clock::now();
        for (const auto& [u, when] : publish_due_) {
          if (when <= now) return true;
        }
        return false;
      };
      while (!queue_stop_ && queue_.empty() && !is_due() &&
             std::chrono::steady_clock::now() < poll_until) {
        queue_cv_.wait_until(lock, next_due());
      }
      if (queue_stop_) return;
      const auto now = std::chrono::steady_clock::now();
      for (auto it = publish_due_.begin(); it != publish_due_.end(); ++it) {
        if (it->second <= now) {
          due_uri = it->first;
          publish_due_.erase(it);
          break;
        }
      }
    }
    if (!due_uri.empty()) {
      QueuePublish(due_uri);  // queued behind what is already waiting
      continue;
    }
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      if (queue_stop_) return;
      if (queue_.empty()) {
        if (ClientGone()) {
          // The spec: exit when the editor's process is gone (its pipe may stay open).
          Log("the client process " + std::to_string(client_pid_) + " is gone; exiting");
          std::_Exit(1);
        }
        continue;
      }
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void Session::StopRequestThread() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    for (auto& [id, cancelled] : requests_) cancelled.Cancel();
  }
  std::vector<SlowThread> slow;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    queue_stop_ = true;
    queue_.clear();  // their replies (ReplyOnce) answer that no reply came
    slow.swap(slow_threads_);
  }
  queue_cv_.notify_all();
  if (request_thread_.joinable()) request_thread_.join();
  for (auto& t : slow) t.thread.join();
}

void Session::RunSlow(std::function<void()> fn) {
  std::vector<SlowThread> finished;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (queue_stop_) return;
    auto done = std::make_shared<std::atomic<bool>>(false);
    // Threads that finished are joined as new ones start.
    auto last = std::partition(slow_threads_.begin(), slow_threads_.end(),
                               [](const SlowThread& t) { return !t.done->load(); });
    std::move(last, slow_threads_.end(), std::back_inserter(finished));
    slow_threads_.erase(last, slow_threads_.end());
    slow_threads_.push_back({std::thread([fn = std::move(fn), done] {
                               fn();
                               done->store(true);
                             }),
                             done});
  }
  for (auto& t : finished) t.thread.join();
}

bool Session::ClientGone() const {
  if (client_pid_ <= 0 || !options_.exit_with_client_process) return false;
  return kill(static_cast<pid_t>(client_pid_), 0) != 0 && errno == ESRCH;
}

void Session::QueuePublish(const std::string& uri, bool after_edit) {
  if (pull_diagnostics_) return;
  if (after_edit) {
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      publish_due_[uri] =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(kPublishAfterEditMs);
    }
    queue_cv_.notify_one();  // the request loop waits until the earliest one is due
    return;
  }
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    publish_due_.erase(uri);                          // published now, with everything so far
    if (!publish_queued_.insert(uri).second) return;  // the queued one will see this change
  }
  Enqueue([this, uri] {
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      publish_queued_.erase(uri);
    }
    std::string path;
    int64_t version = 0;
    {
      std::lock_guard<std::mutex> lock(docs_mu_);
      auto it = docs_.find(uri);
      if (it == docs_.end()) return;  // closed since
      path = it->second.path;
      version = it->second.version;
    }
    bool has_findings = false;
    {
      auto locked = scheduler_.LockState();
      has_findings = locked->snapshot && locked->snapshot->by_file.count(path);
    }
    // Parsed first, so the version published is the one the ranges were computed on.
    if (has_findings) SourceFor(path, &version);
    out_.Notify("textDocument/publishDiagnostics",
                proto::PublishDiagnosticsParams{uri, version, DiagnosticsFor(*this, path)});
  });
}

}  // namespace ttap::lsp
