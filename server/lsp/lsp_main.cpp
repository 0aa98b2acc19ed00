// `ttap lsp`: picks the transport (stdio by default, `--socket=PORT` to connect to a listening
// client, `--listen HOST:PORT` to serve many connections) and runs sessions. Wiring only.
#include "server/lsp/lsp_main.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "server/lsp/channel.h"
#include "server/lsp/framer.h"
#include "server/lsp/lsp_server.h"

namespace ttap::lsp {

int RunLspCommand(const std::vector<std::string>& args) {
  std::signal(SIGPIPE, SIG_IGN);  // a client that goes away must not kill the server
  std::string listen;
  int socket_port = -1;
  ServerOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--stdio") continue;
    if (a.rfind("--socket=", 0) == 0) {
      socket_port = std::atoi(a.c_str() + 9);
    } else if (a == "--socket" && i + 1 < args.size()) {
      socket_port = std::atoi(args[++i].c_str());
    } else if (a.rfind("--listen=", 0) == 0) {
      listen = a.substr(9);
    } else if (a == "--listen" && i + 1 < args.size()) {
      listen = args[++i];
    } else if (a.rfind("--clientProcessId", 0) == 0) {
      if (a.find('=') == std::string::npos && i + 1 < args.size()) ++i;  // passed by some clients
    } else if (a.rfind("--poll-ms=", 0) == 0) {
      options.poll_interval_ms = std::max(50, std::atoi(a.c_str() + 10));
    } else {
      std::fprintf(stderr, "ttap lsp: unknown option %s\n", a.c_str());
      return 2;
    }
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
    auto listener = TcpListener::Listen(host, std::atoi(port.c_str()));
    if (!listener.ok()) {
      std::fprintf(stderr, "ttap lsp: %s\n", listener.status().message().c_str());
      return 2;
    }
    std::fprintf(stderr, "ttap lsp: listening on %s:%d\n", host.c_str(), (*listener)->port());
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
