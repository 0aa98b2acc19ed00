// The on-disk draft cache; see draft_cache.h.
#include "server/llm/draft_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "analysis/base/nesting_depth.h"

namespace ttap::llm {

namespace {

bool MakeDirs(const std::string& path) {
  if (path.empty()) return false;
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool ValidKey(const std::string& key) {
  if (key.empty() || key.size() > 64) return false;
  for (char c : key) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

std::string HashHex(const std::string& text, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ (seed * 0x9E3779B97F4A7C15ull);
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

DraftCache::DraftCache(std::string dir, uint64_t max_bytes)
    : dir_(dir.empty() ? DefaultDir() : std::move(dir)), max_bytes_(max_bytes) {}

std::string DraftCache::DefaultDir() {
  if (const char* d = std::getenv("TTAP_LLM_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/ttap/llm";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/ttap/llm";
  return "/tmp/ttap-llm-cache-" + std::to_string(getuid());
}

std::string DraftCache::Key(const std::string& window_fingerprint, const std::string& snippet_hash,
                            const std::string& model, const std::string& prompt_version) {
  std::string joined;
  for (const std::string* part : {&window_fingerprint, &snippet_hash, &model, &prompt_version}) {
    joined += std::to_string(part->size()) + ":" + *part + ";";
  }
  return HashHex(joined, 1) + HashHex(joined, 2);
}

std::optional<Draft> DraftCache::Get(const std::string& key) {
  if (!ValidKey(key)) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  const std::string path = dir_ + "/" + key + ".json";
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  nlohmann::json j = NestingExceeds(text, kMaxJsonNesting, TextSyntax::kJson)
                         ? nlohmann::json(nlohmann::json::value_t::discarded)
                         : nlohmann::json::parse(text, nullptr, false);
  std::string model = j.is_object() && j.contains("model") && j["model"].is_string()
                          ? j["model"].get<std::string>()
                          : "";
  auto d = DraftFromJson(j, model);
  if (!d.ok()) {
    std::remove(path.c_str());
    return std::nullopt;
  }
  utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // last use, for eviction
  return d.value();
}

Status DraftCache::Put(const std::string& key, const Draft& draft) {
  if (!ValidKey(key)) return Status::Error("bad cache key");
  std::lock_guard<std::mutex> lock(mu_);
  if (!MakeDirs(dir_)) return Status::Error("cannot create the draft cache " + dir_);
  const std::string path = dir_ + "/" + key + ".json";
  const std::string tmp = path + ".tmp" + std::to_string(getpid()) + "-" +
                          std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << DraftToJson(draft).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (!out) {
      std::remove(tmp.c_str());
      return Status::Error("cannot write " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::Error("cannot write " + path);
  }
  EvictLocked();
  return Status::Ok();
}

void DraftCache::EvictLocked() {
  struct Entry {
    std::string path;
    int64_t mtime_ns;
    uint64_t size;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  DIR* d = opendir(dir_.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() < 6 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
    std::string path = dir_ + "/" + name;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    entries.push_back({path,
                       static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                       static_cast<uint64_t>(st.st_size)});
    total += static_cast<uint64_t>(st.st_size);
  }
  closedir(d);
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.mtime_ns < b.mtime_ns; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    if (std::remove(e.path.c_str()) == 0) total -= e.size;
  }
}

}  // namespace ttap::llm
