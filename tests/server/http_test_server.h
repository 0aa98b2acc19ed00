// HttpTestServer: a tiny real HTTP/1.1 server on 127.0.0.1 (POSIX sockets, a thread per
// connection, one request per connection) for the LLM client tests. Each request is recorded
// (method, path, lower-cased headers, body) and answered by the test's handler, which can delay
// its reply or send any status, headers and body. Used by tests/server/llm_client_test.cpp.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ttap_test {

struct HttpRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  int delay_ms = 0;  // before anything is sent
};

class HttpTestServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  explicit HttpTestServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(listen_fd_, 64) != 0) {
      close(listen_fd_);
      listen_fd_ = -1;
      return;
    }
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~HttpTestServer() { Stop(); }

  void Stop() {
    if (stopping_.exchange(true)) return;
    if (acceptor_.joinable()) acceptor_.join();
    if (listen_fd_ >= 0) close(listen_fd_);
    std::vector<std::thread> conns;
    {
      std::lock_guard<std::mutex> lock(mu_);
      conns.swap(connections_);
    }
    for (auto& t : conns) t.join();
  }

  int port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::vector<HttpRequest> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  size_t request_count() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.size();
  }

  // A port on 127.0.0.1 where nothing listens (bound, then closed).
  static int UnusedPort() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    close(fd);
    return ntohs(addr.sin_port);
  }

 private:
  void AcceptLoop() {
    while (!stopping_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      std::lock_guard<std::mutex> lock(mu_);
      connections_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  // Reads until |pred| holds on the buffer, the peer closes, or the server stops.
  template <typename Pred>
  bool ReadUntil(int fd, std::string* buf, Pred pred) {
    while (!pred(*buf)) {
      pollfd p{fd, POLLIN, 0};
      if (stopping_) return false;
      if (poll(&p, 1, 50) <= 0) continue;
      char chunk[65536];
      ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
      if (n <= 0) return false;
      buf->append(chunk, static_cast<size_t>(n));
    }
    return true;
  }

  void Serve(int fd) {
    std::string buf;
    if (!ReadUntil(fd, &buf,
                   [](const std::string& b) { return b.find("\r\n\r\n") != std::string::npos; })) {
      close(fd);
      return;
    }
    HttpRequest req;
    const size_t hdr_end = buf.find("\r\n\r\n");
    size_t line_end = buf.find("\r\n");
    std::string request_line = buf.substr(0, line_end);
    req.method = request_line.substr(0, request_line.find(' '));
    size_t p1 = request_line.find(' ') + 1;
    req.path = request_line.substr(p1, request_line.find(' ', p1) - p1);
    size_t pos = line_end + 2;
    while (pos < hdr_end) {
      size_t e = buf.find("\r\n", pos);
      std::string h = buf.substr(pos, e - pos);
      size_t colon = h.find(':');
      if (colon != std::string::npos) {
        std::string name = h.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::string value = h.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        req.headers[name] = value;
      }
      pos = e + 2;
    }
    size_t content_length =
        req.headers.count("content-length") ? std::stoul(req.headers["content-length"]) : 0;
    const size_t want = hdr_end + 4 + content_length;
    if (!ReadUntil(fd, &buf, [&](const std::string& b) { return b.size() >= want; })) {
      close(fd);
      return;
    }
    req.body = buf.substr(hdr_end + 4, content_length);
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(req);
    }
    HttpResponse resp = handler_(req);
    for (int waited = 0; waited < resp.delay_ms && !stopping_; waited += 10) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::string out = "HTTP/1.1 " + std::to_string(resp.status) + " " + Reason(resp.status) +
                      "\r\nContent-Type: application/json\r\nContent-Length: " +
                      std::to_string(resp.body.size()) + "\r\nConnection: close\r\n";
    for (const auto& [k, v] : resp.headers) out += k + ": " + v + "\r\n";
    out += "\r\n" + resp.body;
    size_t off = 0;
    while (off < out.size() && !stopping_) {
      ssize_t n = send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fd);
  }

  static const char* Reason(int status) {
    switch (status) {
      case 200:
        return "OK";
      case 401:
        return "Unauthorized";
      case 429:
        return "Too Many Requests";
      case 500:
        return "Internal Server Error";
      case 503:
        return "Service Unavailable";
      default:
        return "Status";
    }
  }

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> connections_;
  std::vector<HttpRequest> requests_;
};

}  // namespace ttap_test
