// `ttap lsp`: picks the transport (stdio by default, `--socket=PORT` to connect to a listening
// client, `--listen HOST:PORT` to serve many connections) and runs sessions. Wiring only.
#include "server/lsp/lsp_main.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "server/lsp/channel.h"
#include "server/lsp/framer.h"
#include "server/lsp/lsp_server.h"

namespace ttap::lsp {

namespace {

// A TCP port: decimal digits only, |lowest| to 65535 (atoi wrapped 99999 to a port silently).
bool ParsePort(const std::string& text, int lowest, int* port) {
  if (text.empty() || text.size() > 5) return false;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  if (value < lowest || value > 65535) return false;
  *port = value;
  return true;
}

// 32 hex digits from /dev/urandom, empty when it cannot be read.
std::string RandomToken() {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  unsigned char bytes[16];
  if (!urandom.read(reinterpret_cast<char*>(bytes), sizeof(bytes))) return "";
  std::string out;
  char hex[3];
  for (unsigned char b : bytes) {
    std::snprintf(hex, sizeof(hex), "%02x", b);
    out += hex;
  }
  return out;
}

}  // namespace

int RunLspCommand(const std::vector<std::string>& args) {
  std::signal(SIGPIPE, SIG_IGN);  // a client that goes away must not kill the server
  std::string listen;
  std::string token, token_file;
  bool no_token = false;
  int socket_port = -1;
  const char* socket_port_text = nullptr;
  ServerOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--stdio") continue;
    if (a.rfind("--socket=", 0) == 0) {
      socket_port_text = a.c_str() + 9;
    } else if (a == "--socket" && i + 1 < args.size()) {
      socket_port_text = args[++i].c_str();
    } else if (a.rfind("--listen=", 0) == 0) {
      listen = a.substr(9);
    } else if (a == "--listen" && i + 1 < args.size()) {
      listen = args[++i];
    } else if (a.rfind("--token=", 0) == 0) {
      token = a.substr(8);
    } else if (a == "--token" && i + 1 < args.size()) {
      token = args[++i];
    } else if (a.rfind("--token-file=", 0) == 0) {
      token_file = a.substr(13);
    } else if (a == "--token-file" && i + 1 < args.size()) {
      token_file = args[++i];
    } else if (a == "--no-token") {
      no_token = true;
    } else if (a.rfind("--clientProcessId", 0) == 0) {
      if (a.find('=') == std::string::npos && i + 1 < args.size()) ++i;  // passed by some clients
    } else if (a.rfind("--poll-ms=", 0) == 0) {
      options.poll_interval_ms = std::max(50, std::atoi(a.c_str() + 10));
    } else {
      std::fprintf(stderr, "ttap lsp: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (socket_port_text != nullptr && !ParsePort(socket_port_text, 1, &socket_port)) {
    std::fprintf(stderr, "ttap lsp: --socket: '%s' is not a port (1-65535)\n", socket_port_text);
    return 2;
  }
  if (socket_port >= 0) {
    auto channel = ConnectTcp("127.0.0.1", socket_port);
    if (!channel.ok()) {
      std::fprintf(stderr, "ttap lsp: %s\n", channel.status().message().c_str());
      return 2;
    }
    Framer framer(channel->get());
    return RunSession(&framer, options);
  }
  if (!listen.empty()) {
    std::string host = "127.0.0.1";
    std::string port = listen;
    size_t colon = listen.rfind(':');
    if (colon != std::string::npos) {
      host = listen.substr(0, colon);
      port = listen.substr(colon + 1);
    }
    int port_number = 0;
    if (!ParsePort(port, 0, &port_number)) {
      std::fprintf(stderr, "ttap lsp: --listen: '%s' is not a port (0-65535)\n", port.c_str());
      return 2;
    }
    if (!token_file.empty()) {
      std::ifstream in(token_file);
      if (!in || !std::getline(in, token) || token.empty()) {
        std::fprintf(stderr, "ttap lsp: --token-file: cannot read a token from %s\n",
                     token_file.c_str());
        return 2;
      }
    }
    // Any local user can connect to a port: off the loopback interface a token is required
    // unless --no-token says otherwise (as Jupyter and code-server do); one is made if none is
    // given. On loopback it is asked for only when given.
    const bool loopback = host == "127.0.0.1" || host == "localhost" || host == "::1" ||
                          host == "[::1]" || host.rfind("127.", 0) == 0;
    bool generated = false;
    if (token.empty() && !no_token && !loopback) {
      token = RandomToken();
      generated = !token.empty();
      if (!generated) {
        std::fprintf(stderr, "ttap lsp: cannot make a token (/dev/urandom): pass --token\n");
        return 2;
      }
    }
    options.token = token;
    auto listener = TcpListener::Listen(host, port_number);
    if (!listener.ok()) {
      std::fprintf(stderr, "ttap lsp: %s\n", listener.status().message().c_str());
      return 2;
    }
    std::fprintf(stderr, "ttap lsp: listening on %s:%d\n", host.c_str(), (*listener)->port());
    if (generated) {
      std::fprintf(stderr,
                   "ttap lsp: clients must send initializationOptions.token = \"%s\" in "
                   "initialize (--token / --token-file to choose it, --no-token for none)\n",
                   token.c_str());
    } else if (!token.empty()) {
      std::fprintf(stderr, "ttap lsp: clients must send initializationOptions.token\n");
    }
    options.exit_with_client_process = false;
    while (auto channel = (*listener)->Accept()) {
      // Each connection is its own session; `exit` ends that session, not the server.
      std::thread([ch = std::shared_ptr<ByteChannel>(std::move(channel)), options] {
        Framer framer(ch.get());
        RunSession(&framer, options);
        ch->Close();
      }).detach();
    }
    return 0;
  }
  auto channel = StdioChannel();
  Framer framer(channel.get());
  return RunSession(&framer, options);
}

}  // namespace ttap::lsp
