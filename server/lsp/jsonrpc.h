// JSON-RPC 2.0 over a Framer: message classification, error codes, and ReplyOnce (every request
// gets exactly one reply: a reply object that was never used answers -32603 when destroyed).
// Only the server layer uses nlohmann::json.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "server/lsp/framer.h"

namespace ttap::lsp {

using json = nlohmann::json;

enum ErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  kServerNotInitialized = -32002,
  kRequestCancelled = -32800,
  kContentModified = -32801,
};

// Sends notifications and replies; thread-safe.
class Outbox {
 public:
  explicit Outbox(Framer* framer) : framer_(framer) {}
  void Notify(const std::string& method, json params);
  void Reply(const json& id, json result);
  void ReplyError(const json& id, int code, const std::string& message);
  // A request to the client; |on_reply| gets (result, error) on the reader thread.
  void Call(const std::string& method, json params,
            std::function<void(const json&, const json&)> on_reply);
  // Routes a client's response to the matching Call; false when unknown.
  bool TakeReply(const json& message);
  bool alive() const { return alive_; }

 private:
  void Send(const json& message);
  Framer* framer_;
  std::atomic<bool> alive_{true};
  std::mutex mu_;
  int next_id_ = 1;
  std::map<int, std::function<void(const json&, const json&)>> pending_;
};

// Exactly one reply per request.
class ReplyOnce {
 public:
  ReplyOnce(Outbox* out, json id) : out_(out), id_(std::move(id)) {}
  ~ReplyOnce() {
    if (!done_.exchange(true)) out_->ReplyError(id_, kInternalError, "the server sent no reply");
  }
  void Result(json result) {
    if (!done_.exchange(true)) out_->Reply(id_, std::move(result));
  }
  void Error(int code, const std::string& message) {
    if (!done_.exchange(true)) out_->ReplyError(id_, code, message);
  }
  bool done() const { return done_; }
  const json& id() const { return id_; }

 private:
  Outbox* out_;
  json id_;
  std::atomic<bool> done_{false};
};
using Reply = std::shared_ptr<ReplyOnce>;

}  // namespace ttap::lsp
