// ByteSource: reads a trace file as a stream of uncompressed bytes, plain or gzip (detected by its
// magic bytes, several members allowed), in caller-sized chunks so a trace never has to fit in
// memory. Used by the loader's reader thread only (not thread-safe).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/base/status.h"

struct z_stream_s;

namespace ttap {

class ByteSource {
 public:
  // |path| "-" is standard input; pipes and FIFOs are streamed (a FIFO without a writer reads
  // as empty instead of blocking).
  static StatusOr<std::unique_ptr<ByteSource>> Open(const std::string& path);
  // Reads from memory that outlives the source (tests, fuzzing).
  static StatusOr<std::unique_ptr<ByteSource>> OpenMemory(std::string_view data,
                                                          const std::string& name);
  ~ByteSource();

  // Reads up to |max| bytes into |dst|. Returns 0 at the end of the data; an error for I/O
  // failures and corrupt or truncated gzip streams.
  StatusOr<size_t> Read(char* dst, size_t max);

  bool gzip() const { return gzip_; }
  // Uncompressed size if known cheaply (plain: file size; gzip: the trailer's ISIZE, a hint).
  uint64_t size_hint() const { return size_hint_; }
  uint64_t compressed_offset() const { return compressed_read_; }

 private:
  ByteSource() = default;
  StatusOr<size_t> ReadGzip(char* dst, size_t max);
  static StatusOr<std::unique_ptr<ByteSource>> FromFile(FILE* f, const std::string& name,
                                                        uint64_t size);

  std::string path_;
  FILE* file_ = nullptr;
  std::string pending_;  // bytes read to tell the format, handed out before the file's next ones
  bool gzip_ = false;
  bool eof_ = false;
  bool stream_ended_ = false;  // gzip: last member finished
  uint64_t size_hint_ = 0;
  uint64_t compressed_read_ = 0;
  std::unique_ptr<z_stream_s> zs_;
  std::vector<unsigned char> in_buf_;
};

}  // namespace ttap
