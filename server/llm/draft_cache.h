// DraftCache: validated LLM drafts on disk, so that scanning the same trace again (or reopening
// the editor) does not pay for the same request twice. One small JSON file per key (the draft as
// DraftToJson writes it: model, category, confidence, explanation, fix); the key hashes the
// window fingerprint, the source snippet's hash, the model and the prompt version. Bounded in
// size: after each write the oldest entries (by last use) are removed until the total fits.
// Entries hold only what the model replied, never the API key or the request.
//
// Default directory: $TTAP_LLM_CACHE_DIR, else $XDG_CACHE_HOME/ttap/llm, else ~/.cache/ttap/llm.
// Used by the drafter (drafter.h). Thread-safe (one process; writes are atomic renames, so
// concurrent processes at worst repeat a request).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "analysis/base/status.h"
#include "server/llm/llm_client.h"

namespace ttap::llm {

class DraftCache {
 public:
  // |dir| empty: DefaultDir(). |max_bytes| bounds the sum of the entries' sizes.
  explicit DraftCache(std::string dir = "", uint64_t max_bytes = 64ull << 20);

  static std::string DefaultDir();
  // A 32-hex-digit key over the four parts (length-prefixed, so parts cannot run together).
  static std::string Key(const std::string& window_fingerprint, const std::string& snippet_hash,
                         const std::string& model, const std::string& prompt_version);

  // The entry, if present and still valid against the schema (a corrupt one is removed).
  std::optional<Draft> Get(const std::string& key);
  Status Put(const std::string& key, const Draft& draft);

  const std::string& dir() const { return dir_; }

 private:
  void EvictLocked();
  std::string dir_;
  uint64_t max_bytes_;
  std::mutex mu_;
};

// 64-bit FNV-1a of |text| as 16 hex digits (cache keys and snippet hashes; not cryptographic).
std::string HashHex(const std::string& text, uint64_t seed = 0);

}  // namespace ttap::llm
