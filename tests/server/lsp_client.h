// LspClient: drives `ttap lsp` as a real process (stdio pipes, or a TCP socket) for end-to-end
// JSON-RPC transcript tests: framing, requests with ids, waiting for notifications with a time
// limit. Raw bytes can be sent to test the framer.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ttap_test {

using json = nlohmann::json;

class LspClient {
 public:
  // Starts `ttap lsp ARGS...` with stdio pipes.
  explicit LspClient(const std::string& binary, std::vector<std::string> args = {},
                     bool quiet_stderr = false) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      if (quiet_stderr) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
      }
      close(in[1]);
      close(out[0]);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(binary.c_str()));
      static std::string lsp = "lsp";
      argv.push_back(lsp.data());
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    write_fd_ = in[1];
    read_fd_ = out[0];
    signal(SIGPIPE, SIG_IGN);
  }
  // Adopts an already connected socket (TCP tests); |pid| is the server process, if any.
  LspClient(int socket_fd, pid_t pid) : pid_(pid), read_fd_(socket_fd), write_fd_(socket_fd) {}
  ~LspClient() {
    if (write_fd_ >= 0) close(write_fd_);
    if (read_fd_ >= 0 && read_fd_ != write_fd_) close(read_fd_);
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // Writes |bytes|, reading what the server sends meanwhile (kept for WaitFor), as a real client
  // does: a server answering while the client writes must never fill both pipes.
  void SendRaw(const std::string& bytes) {
    const int flags = fcntl(write_fd_, F_GETFL);
    fcntl(write_fd_, F_SETFL, flags | O_NONBLOCK);
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::write(write_fd_, bytes.data() + off, bytes.size() - off);
      if (n > 0) {
        off += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;
      pollfd p[2] = {{write_fd_, POLLOUT, 0}, {read_fd_, POLLIN, 0}};
      if (poll(p, 2, 20000) <= 0) break;
      if (p[1].revents & POLLIN) {
        char chunk[65536];
        ssize_t r = ::read(read_fd_, chunk, sizeof(chunk));
        if (r > 0) buffer_.append(chunk, static_cast<size_t>(r));
      }
      if ((p[1].revents & (POLLHUP | POLLERR)) && !(p[0].revents & POLLOUT)) break;
    }
    fcntl(write_fd_, F_SETFL, flags);
  }
  void Send(const json& msg) {
    std::string body = msg.dump();
    SendRaw("Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  }
  int Request(const std::string& method, json params) {
    int id = next_id_++;
    Send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
    return id;
  }
  void Notify(const std::string& method, json params) {
    Send({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
  }
  // Waits for the response to |id| (notifications and server requests seen meanwhile are kept).
  json Response(int id, int timeout_ms = 20000) {
    return WaitFor(
        [&](const json& m) { return m.contains("id") && m["id"] == id && !m.contains("method"); },
        timeout_ms);
  }
  json Call(const std::string& method, json params, int timeout_ms = 20000) {
    return Response(Request(method, std::move(params)), timeout_ms);
  }
  // Waits for a message matching |pred|; returns null json on timeout.
  template <typename Pred>
  json WaitFor(Pred pred, int timeout_ms = 20000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      for (auto it = inbox_.begin(); it != inbox_.end(); ++it) {
        if (pred(*it)) {
          json m = *it;
          inbox_.erase(it);
          return m;
        }
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0 || !ReadMessage(static_cast<int>(left))) return json();
    }
  }
  json Notification(const std::string& method, int timeout_ms = 20000) {
    return WaitFor(
        [&](const json& m) { return m.value("method", "") == method && !m.contains("id"); },
        timeout_ms);
  }
  // Answers server->client requests (workspace/configuration, registerCapability, ...) with
  // |result|.
  void AnswerServerRequests(const json& result = nullptr) {
    for (auto it = inbox_.begin(); it != inbox_.end();) {
      if (it->contains("method") && it->contains("id")) {
        Send({{"jsonrpc", "2.0"}, {"id", (*it)["id"]}, {"result", result}});
        it = inbox_.erase(it);
      } else {
        ++it;
      }
    }
  }
  const std::deque<json>& inbox() const { return inbox_; }
  // Reads and drops whatever the server has sent so far (keeps its stdout pipe from filling).
  void Drain() {
    while (ReadMessage(0)) {
    }
    inbox_.clear();
  }
  // Waits for the process to exit; returns its exit code (-1 on timeout).
  int WaitExit(int timeout_ms = 10000) {
    for (int waited = 0; waited < timeout_ms; waited += 20) {
      int status;
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      usleep(20000);
    }
    return -1;
  }
  void CloseInput() {
    if (write_fd_ >= 0 && write_fd_ != read_fd_) {
      close(write_fd_);
      write_fd_ = -1;
    }
  }
  bool alive() const { return pid_ > 0 && kill(pid_, 0) == 0; }

 private:
  bool ReadMessage(int timeout_ms) {
    while (true) {
      size_t hdr_end = buffer_.find("\r\n\r\n");
      if (hdr_end != std::string::npos) {
        size_t cl = buffer_.find("Content-Length: ");
        size_t len = std::stoul(buffer_.substr(cl + 16, hdr_end - cl - 16));
        if (buffer_.size() >= hdr_end + 4 + len) {
          inbox_.push_back(json::parse(buffer_.substr(hdr_end + 4, len)));
          buffer_.erase(0, hdr_end + 4 + len);
          return true;
        }
      }
      pollfd p{read_fd_, POLLIN, 0};
      if (poll(&p, 1, timeout_ms) <= 0) return false;
      char chunk[65536];
      ssize_t n = ::read(read_fd_, chunk, sizeof(chunk));
      if (n <= 0) return false;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
  pid_t pid_ = -1;
  int read_fd_ = -1;
  int write_fd_ = -1;
  bool reaped_ = false;
  int next_id_ = 1;
  std::string buffer_;
  std::deque<json> inbox_;
};

// Connects to 127.0.0.1:|port|, retrying for about 5 s while a server starts listening; the
// socket, or -1.
inline int ConnectLoopback(int port) {
  for (int i = 0; i < 100; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) return fd;
    close(fd);
    usleep(50000);
  }
  return -1;
}

}  // namespace ttap_test
