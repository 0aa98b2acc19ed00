// Framer: JSON-RPC base protocol framing (Content-Length headers) over any ByteChannel. Reading is
// done by one thread (the server's main loop); Write is thread-safe (replies come from workers).
// Malformed headers and oversized bodies are reported, never fatal: the caller answers -32700.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>

#include "server/lsp/channel.h"

namespace ttap::lsp {

class Framer {
 public:
  static constexpr size_t kDefaultMaxContent = size_t{64} << 20;
  explicit Framer(ByteChannel* channel, size_t max_content = kDefaultMaxContent)
      : channel_(channel), max_content_(max_content) {}

  enum class ReadResult { kMessage, kEof, kBadHeader, kTooLarge };
  // Reads the next message body into |body|. On kBadHeader/kTooLarge |error| says why and the
  // framer has skipped what it could to stay in step with the stream.
  ReadResult Read(std::string* body, std::string* error);
  // Frames and writes |body|; false when the channel is gone.
  bool Write(const std::string& body);
  void Close() { channel_->Close(); }

 private:
  bool Fill();  // reads more bytes into buffer_; false at end of stream
  bool ReadLine(std::string* line);
  ByteChannel* channel_;
  size_t max_content_;
  std::string buffer_;
  size_t pos_ = 0;
  std::mutex write_mu_;
};

}  // namespace ttap::lsp
