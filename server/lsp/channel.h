// Byte channels for the language server: stdio, a TCP connection to the client
// (`--socket=PORT`, vscode-languageclient's socket transport) and connections accepted by
// `--listen HOST:PORT` (Asio). All feed one Content-Length framer (framer.h), as in the HLASM
// language server. A channel is read by one thread and written under the framer's lock.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "analysis/base/status.h"

namespace ttap::lsp {

class ByteChannel {
 public:
  virtual ~ByteChannel() = default;
  // Reads up to |max| bytes; 0 at end of stream or on error.
  virtual size_t Read(char* dst, size_t max) = 0;
  // Writes all of |data|; false when the peer is gone.
  virtual bool Write(const char* data, size_t size) = 0;
  virtual void Close() = 0;
};

// stdin/stdout (the default transport).
std::unique_ptr<ByteChannel> StdioChannel();
// Connects to a client listening on 127.0.0.1:|port|.
StatusOr<std::unique_ptr<ByteChannel>> ConnectTcp(const std::string& host, int port);

// Accepts connections on |host|:|port| (loopback by default); each accepted connection is handed
// to |on_connection| on its own thread. Runs until Stop() or an accept error.
class TcpListener {
 public:
  static StatusOr<std::unique_ptr<TcpListener>> Listen(const std::string& host, int port);
  virtual ~TcpListener() = default;
  virtual int port() const = 0;                       // the bound port (useful with port 0)
  virtual std::unique_ptr<ByteChannel> Accept() = 0;  // nullptr once stopped
  virtual void Stop() = 0;
};

}  // namespace ttap::lsp
