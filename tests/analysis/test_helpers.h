// Shared helpers of the analysis tests: gzip compression of inline traces and temporary files.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ttap::testing {

// Compresses |data| into one gzip member (deflateInit2 with windowBits 31).
inline std::string Gzip(std::string_view data) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::string out(deflateBound(&zs, data.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate did not finish");
  out.resize(zs.total_out);
  return out;
}

// A file under the temporary directory, removed when the object goes out of scope.
class TempFile {
 public:
  TempFile(std::string_view contents, std::string_view suffix) {
    static std::atomic<int> counter{0};
    path_ =
        (std::filesystem::temp_directory_path() / ("ttap_test_" + std::to_string(getpid()) + "_" +
                                                   std::to_string(counter++) + std::string(suffix)))
            .string();
    FILE* f = std::fopen(path_.c_str(), "wb");
    if (!f) throw std::runtime_error("cannot create " + path_);
    std::fwrite(contents.data(), 1, contents.size(), f);
    std::fclose(f);
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ttap::testing
