// stdio and Asio TCP channels; see channel.h.
#include "server/lsp/channel.h"

#include <unistd.h>

#include <asio.hpp>
#include <atomic>

namespace ttap::lsp {

namespace {

class FdChannel : public ByteChannel {
 public:
  FdChannel(int in, int out) : in_(in), out_(out) {}
  size_t Read(char* dst, size_t max) override {
    while (true) {
      ssize_t n = ::read(in_, dst, max);
      if (n < 0 && errno == EINTR) continue;
      return n > 0 ? static_cast<size_t>(n) : 0;
    }
  }
  bool Write(const char* data, size_t size) override {
    while (size > 0) {
      ssize_t n = ::write(out_, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }
  void Close() override {}

 private:
  int in_, out_;
};

class SocketChannel : public ByteChannel {
 public:
  explicit SocketChannel(std::shared_ptr<asio::io_context> io, asio::ip::tcp::socket socket)
      : io_(std::move(io)), socket_(std::move(socket)) {
    asio::error_code ec;
    socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  }
  size_t Read(char* dst, size_t max) override {
    asio::error_code ec;
    size_t n = socket_.read_some(asio::buffer(dst, max), ec);
    return ec ? 0 : n;
  }
  bool Write(const char* data, size_t size) override {
    asio::error_code ec;
    asio::write(socket_, asio::buffer(data, size), ec);
    return !ec;
  }
  void Close() override {
    asio::error_code ec;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

 private:
  std::shared_ptr<asio::io_context> io_;
  asio::ip::tcp::socket socket_;
};

class AsioListener : public TcpListener {
 public:
  AsioListener(std::shared_ptr<asio::io_context> io, asio::ip::tcp::acceptor acceptor)
      : io_(std::move(io)), acceptor_(std::move(acceptor)) {}
  int port() const override { return acceptor_.local_endpoint().port(); }
  std::unique_ptr<ByteChannel> Accept() override {
    asio::ip::tcp::socket socket(*io_);
    asio::error_code ec;
    acceptor_.accept(socket, ec);
    if (ec || stopped_) return nullptr;
    return std::make_unique<SocketChannel>(io_, std::move(socket));
  }
  void Stop() override {
    stopped_ = true;
    asio::error_code ec;
    acceptor_.close(ec);
  }

 private:
  std::shared_ptr<asio::io_context> io_;
  asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stopped_{false};
};

}  // namespace

std::unique_ptr<ByteChannel> StdioChannel() {
  return std::make_unique<FdChannel>(STDIN_FILENO, STDOUT_FILENO);
}

// |host| as users write it ("127.0.0.1", "localhost", "::1", "[::1]", a name the system
// resolves) as an address.
Status ResolveAddress(asio::io_context& io, const std::string& host, int port,
                      asio::ip::address* out) {
  std::string name = host;
  if (name.size() >= 2 && name.front() == '[' && name.back() == ']') {
    name = name.substr(1, name.size() - 2);
  }
  asio::error_code ec;
  *out = asio::ip::make_address(name == "localhost" ? "127.0.0.1" : name, ec);
  if (!ec) return Status::Ok();
  asio::ip::tcp::resolver resolver(io);
  auto results = resolver.resolve(name, std::to_string(port), ec);
  if (ec || results.empty()) {
    return Status::Error("bad address " + host + ": " +
                         (ec ? ec.message() : std::string("no address")));
  }
  *out = results.begin()->endpoint().address();
  return Status::Ok();
}

StatusOr<std::unique_ptr<ByteChannel>> ConnectTcp(const std::string& host, int port) {
  auto io = std::make_shared<asio::io_context>();
  asio::error_code ec;
  asio::ip::address address;
  if (Status st = ResolveAddress(*io, host, port, &address); !st.ok()) return st;
  asio::ip::tcp::socket socket(*io);
  socket.connect({address, static_cast<unsigned short>(port)}, ec);
  if (ec) {
    return Status::Error("cannot connect to " + host + ":" + std::to_string(port) + ": " +
                         ec.message());
  }
  return std::unique_ptr<ByteChannel>(new SocketChannel(io, std::move(socket)));
}

StatusOr<std::unique_ptr<TcpListener>> TcpListener::Listen(const std::string& host, int port) {
  auto io = std::make_shared<asio::io_context>();
  asio::error_code ec;
  asio::ip::address address;
  if (Status st = ResolveAddress(*io, host, port, &address); !st.ok()) return st;
  asio::ip::tcp::acceptor acceptor(*io);
  asio::ip::tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Status::Error("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                         ec.message());
  return std::unique_ptr<TcpListener>(new AsioListener(io, std::move(acceptor)));
}

}  // namespace ttap::lsp
