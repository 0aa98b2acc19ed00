// StringPool: interns strings (event names, categories, file paths) and hands out dense 32-bit
// ids. Id 0 is always the empty string. Not thread-safe: each loader worker owns a local pool and
// the builder folds them into the trace's pool once (see trace_builder.cpp).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ttap {

using StringId = uint32_t;
constexpr StringId kEmptyString = 0;

class StringPool {
 public:
  StringPool();
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;
  StringPool(StringPool&&) = default;
  StringPool& operator=(StringPool&&) = default;

  StringId Intern(std::string_view s);
  // Returns the id of |s| if interned, else kEmptyString (callers compare against known ids).
  StringId Find(std::string_view s) const;
  std::string_view Get(StringId id) const { return views_[id]; }
  size_t size() const { return views_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  std::deque<std::string> storage_;  // deque: stable addresses for the views.
  std::vector<std::string_view> views_;
  std::unordered_map<std::string_view, StringId> index_;
  size_t bytes_ = 0;
};

}  // namespace ttap
