// Binder: the server's handlers by method, each taking its params as a struct of protocol.h. The
// params are read before the handler runs; a request whose params do not read is answered
// InvalidParams (-32602) naming the field ("textDocument/hover: params.position.line: expected an
// integer"), a notification's are reported to the caller, and the handler does not run. Reading
// never throws. Filled and called by the session's dispatch (lsp_server.cpp).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "analysis/base/cancel.h"
#include "server/lsp/jsonrpc.h"
#include "server/lsp/protocol.h"

namespace ttap::lsp {

// Set by $/cancelRequest (or at shutdown) while a request waits or runs.
using CancelFlag = CancelToken;  // set by $/cancelRequest (analysis/base/cancel.h)

// The params of a method that reads none: anything reads.
struct NoParams {};
inline bool FromJson(const json&, NoParams*, const proto::JsonPath&) { return true; }

class Binder {
 public:
  // Binds |method| to owner->fn(params, reply) or owner->fn(params, reply, cancelled).
  template <typename Owner, typename Params>
  void Request(const std::string& method, Owner* owner, void (Owner::*fn)(const Params&, Reply)) {
    Request<Params>(method, [owner, fn](const Params& p, Reply r, const CancelFlag&) {
      (owner->*fn)(p, std::move(r));
    });
  }
  template <typename Owner, typename Params>
  void Request(const std::string& method, Owner* owner,
               void (Owner::*fn)(const Params&, Reply, const CancelFlag&)) {
    Request<Params>(method, [owner, fn](const Params& p, Reply r, const CancelFlag& cancelled) {
      (owner->*fn)(p, std::move(r), cancelled);
    });
  }
  template <typename Params>
  void Request(const std::string& method,
               std::function<void(const Params&, Reply, const CancelFlag&)> handler) {
    requests_[method] = [method, handler = std::move(handler)](const json& params, Reply reply,
                                                               const CancelFlag& cancelled) {
      Params p;
      std::string error = Read(params, &p);
      if (!error.empty()) return reply->Error(kInvalidParams, method + ": " + error);
      handler(p, std::move(reply), cancelled);
    };
  }
  // Binds the notification |method| to owner->fn(params).
  template <typename Owner, typename Params>
  void Notification(const std::string& method, Owner* owner, void (Owner::*fn)(const Params&)) {
    notifications_[method] = [owner, fn](const json& params) {
      Params p;
      std::string error = Read(params, &p);
      if (error.empty()) (owner->*fn)(p);
      return error;
    };
  }

  // Runs |method|'s handler, which answers |reply|; false when no handler is bound.
  bool CallRequest(const std::string& method, const json& params, Reply reply,
                   const CancelFlag& cancelled) const {
    auto it = requests_.find(method);
    if (it == requests_.end()) return false;
    it->second(params, std::move(reply), cancelled);
    return true;
  }
  // Runs |method|'s handler; "" when it ran or none is bound, else why its params do not read.
  std::string CallNotification(const std::string& method, const json& params) const {
    auto it = notifications_.find(method);
    return it == notifications_.end() ? std::string() : it->second(params);
  }

  // "" when |params| read into |out|, else the field and what was wrong.
  template <typename Params>
  static std::string Read(const json& params, Params* out) {
    std::string error;
    using proto::FromJson;
    if (!FromJson(params, out, proto::JsonPath("params", &error)) && error.empty())
      error = "params: unreadable";
    return error;
  }

 private:
  std::map<std::string, std::function<void(const json&, Reply, const CancelFlag&)>> requests_;
  std::map<std::string, std::function<std::string(const json&)>> notifications_;
};

}  // namespace ttap::lsp
