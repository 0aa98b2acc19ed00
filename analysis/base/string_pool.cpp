// StringPool implementation; see string_pool.h.
#include "analysis/base/string_pool.h"

namespace ttap {

StringPool::StringPool() {
  views_.emplace_back();
  index_.emplace(std::string_view(), kEmptyString);
}

StringId StringPool::Intern(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  storage_.emplace_back(s);
  std::string_view stored = storage_.back();
  StringId id = static_cast<StringId>(views_.size());
  views_.push_back(stored);
  index_.emplace(stored, id);
  bytes_ += s.size();
  return id;
}

StringId StringPool::Find(std::string_view s) const {
  auto it = index_.find(s);
  return it == index_.end() ? kEmptyString : it->second;
}

}  // namespace ttap
