// ByteSource implementation: stdio reads plus zlib's streaming inflate; see byte_source.h.
#include "analysis/load/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ttap {

namespace {
constexpr size_t kInBufSize = 1 << 20;
}

StatusOr<std::unique_ptr<ByteSource>> ByteSource::Open(const std::string& path) {
  if (path == "-") {  // standard input, streamed
    const int fd = dup(STDIN_FILENO);
    FILE* f = fd >= 0 ? fdopen(fd, "rb") : nullptr;
    if (!f) return Status::Error("standard input: " + std::string(std::strerror(errno)));
    return FromFile(f, "standard input", 0);
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return Status::Error(path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return Status::Error(path + ": is a directory");
  if (S_ISFIFO(st.st_mode)) {
    // A pipe is streamed. Opened without blocking, so a named FIFO that no one writes to reads
    // as empty at once instead of waiting forever for a writer.
    const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK);
    if (fd < 0) return Status::Error(path + ": " + std::strerror(errno));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    FILE* f = fdopen(fd, "rb");
    if (!f) {
      close(fd);
      return Status::Error(path + ": " + std::strerror(errno));
    }
    return FromFile(f, path, 0);
  }
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Status::Error(path + ": " + std::strerror(errno));
  return FromFile(f, path, static_cast<uint64_t>(st.st_size));
}

StatusOr<std::unique_ptr<ByteSource>> ByteSource::OpenMemory(std::string_view data,
                                                             const std::string& name) {
  FILE* f = data.empty() ? std::fopen("/dev/null", "rb")
                         : fmemopen(const_cast<char*>(data.data()), data.size(), "rb");
  if (!f) return Status::Error(name + ": " + std::strerror(errno));
  return FromFile(f, name, data.size());
}

StatusOr<std::unique_ptr<ByteSource>> ByteSource::FromFile(FILE* f, const std::string& path,
                                                           uint64_t size) {
  std::unique_ptr<ByteSource> src(new ByteSource());
  src->path_ = path;
  src->file_ = f;
  // The first two bytes tell gzip from plain text. They are kept and handed out first, so a
  // source that cannot seek back (a pipe) loses nothing.
  unsigned char magic[2] = {0, 0};
  size_t got = std::fread(magic, 1, 2, f);
  src->pending_.assign(reinterpret_cast<const char*>(magic), got);
  src->gzip_ = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  src->size_hint_ = size;
  if (src->gzip_ && size >= 18) {  // a regular file: the trailer's ISIZE, then back after magic
    unsigned char trailer[4];
    if (std::fseek(f, -4, SEEK_END) == 0 && std::fread(trailer, 1, 4, f) == 4) {
      uint64_t isize = trailer[0] | (trailer[1] << 8) | (trailer[2] << 16) |
                       (static_cast<uint64_t>(trailer[3]) << 24);
      // ISIZE is modulo 2^32: a hint only.
      while (isize < size) isize += (1ull << 32);
      src->size_hint_ = isize;
    }
    std::fseek(f, static_cast<long>(got), SEEK_SET);
  }
  if (src->gzip_) {
    src->zs_ = std::make_unique<z_stream_s>();
    std::memset(src->zs_.get(), 0, sizeof(z_stream_s));
    if (inflateInit2(src->zs_.get(), 15 + 16) != Z_OK) {
      return Status::Error(path + ": zlib initialisation failed");
    }
    src->in_buf_.resize(kInBufSize);
  }
  return src;
}

ByteSource::~ByteSource() {
  if (zs_) inflateEnd(zs_.get());
  if (file_) std::fclose(file_);
}

StatusOr<size_t> ByteSource::Read(char* dst, size_t max) {
  if (gzip_) return ReadGzip(dst, max);
  size_t from_pending = std::min(max, pending_.size());
  std::memcpy(dst, pending_.data(), from_pending);
  pending_.erase(0, from_pending);
  size_t n = from_pending + std::fread(dst + from_pending, 1, max - from_pending, file_);
  if (n == 0 && std::ferror(file_)) return Status::Error(path_ + ": read error");
  compressed_read_ += n;
  return n;
}

StatusOr<size_t> ByteSource::ReadGzip(char* dst, size_t max) {
  z_stream_s* zs = zs_.get();
  size_t produced = 0;
  while (produced < max) {
    if (zs->avail_in == 0 && !eof_) {
      const size_t kept = pending_.size();  // the magic bytes, before the first read
      std::memcpy(in_buf_.data(), pending_.data(), kept);
      pending_.clear();
      size_t n = kept + std::fread(in_buf_.data() + kept, 1, in_buf_.size() - kept, file_);
      if (n == 0) {
        if (std::ferror(file_)) return Status::Error(path_ + ": read error");
        eof_ = true;
      }
      compressed_read_ += n;
      zs->next_in = in_buf_.data();
      zs->avail_in = static_cast<uInt>(n);
    }
    if (stream_ended_) {
      // Skip padding zeros between/after members; start a new member on a new magic.
      while (zs->avail_in > 0 && *zs->next_in == 0) {
        ++zs->next_in;
        --zs->avail_in;
      }
      if (zs->avail_in == 0) {
        if (eof_) return produced;
        continue;
      }
      if (inflateReset(zs) != Z_OK) return Status::Error(path_ + ": zlib reset failed");
      stream_ended_ = false;
    }
    if (zs->avail_in == 0 && eof_) {
      return Status::Error(path_ + ": truncated gzip stream at compressed byte " +
                           std::to_string(compressed_read_));
    }
    zs->next_out = reinterpret_cast<Bytef*>(dst + produced);
    zs->avail_out = static_cast<uInt>(max - produced);
    int rc = inflate(zs, Z_NO_FLUSH);
    produced = max - zs->avail_out;
    if (rc == Z_STREAM_END) {
      stream_ended_ = true;
    } else if (rc == Z_BUF_ERROR) {
      // No progress possible: need more input (handled above) or output space (loop ends).
      if (zs->avail_in == 0 && eof_) {
        return Status::Error(path_ + ": truncated gzip stream at compressed byte " +
                             std::to_string(compressed_read_));
      }
    } else if (rc != Z_OK) {
      uint64_t at = compressed_read_ - zs->avail_in;
      return Status::Error(path_ + ": corrupt gzip data near compressed byte " +
                           std::to_string(at) + (zs->msg ? std::string(" (") + zs->msg + ")" : ""));
    }
  }
  return produced;
}

}  // namespace ttap
