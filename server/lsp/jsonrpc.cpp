// Outbox; see jsonrpc.h.
#include "server/lsp/jsonrpc.h"

namespace ttap::lsp {

void Outbox::Send(const json& message) {
  if (!alive_) return;
  if (!framer_->Write(message.dump(-1, ' ', false, json::error_handler_t::replace))) alive_ = false;
}

void Outbox::Notify(const std::string& method, json params) {
  Send({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

void Outbox::Reply(const json& id, json result) {
  Send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

void Outbox::ReplyError(const json& id, int code, const std::string& message) {
  Send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
}

void Outbox::Call(const std::string& method, json params,
                  std::function<void(const json&, const json&)> on_reply) {
  int id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_id_++;
    pending_[id] = std::move(on_reply);
  }
  Send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
}

bool Outbox::TakeReply(const json& message) {
  if (!message.contains("id") || !message["id"].is_number_integer()) return false;
  std::function<void(const json&, const json&)> fn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(message["id"].get<int>());
    if (it == pending_.end()) return false;
    fn = std::move(it->second);
    pending_.erase(it);
  }
  fn(message.value("result", json()), message.value("error", json()));
  return true;
}

}  // namespace ttap::lsp
