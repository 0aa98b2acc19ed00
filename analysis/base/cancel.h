// CancelToken: the one cancellation type. Whoever starts work keeps a token and may Cancel() it;
// the work (trace loading, the rules' callers, LLM requests, the language server's worker and
// requests) holds a copy and polls cancelled(). Copies share one flag. A default-constructed
// token is never cancelled. Header-only; any module may use it.
#pragma once

#include <atomic>
#include <memory>

namespace ttap {

class CancelToken {
 public:
  CancelToken() = default;  // never cancelled
  // A token that Cancel() can set.
  static CancelToken Cancellable() {
    CancelToken t;
    t.flag_ = std::make_shared<std::atomic<bool>>(false);
    return t;
  }
  // Sets the flag every copy sees; a no-op on a token that cannot be cancelled.
  void Cancel() const {
    if (flag_) flag_->store(true, std::memory_order_relaxed);
  }
  bool cancelled() const { return flag_ && flag_->load(std::memory_order_relaxed); }
  // True for a token made by Cancellable() (and its copies).
  bool cancellable() const { return flag_ != nullptr; }

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

}  // namespace ttap
