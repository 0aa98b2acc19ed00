// Small string helpers every module uses (name tests on trace event names, paths, Python text):
// one definition each instead of a private copy per file. Header-only, no allocation except
// Lower's result.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace ttap {

inline bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}
inline bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
inline bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}
// ASCII case-insensitive Contains; an empty |needle| is contained everywhere.
inline bool ContainsIgnoreCase(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return true;
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  });
  return it != hay.end();
}
// ASCII lower case.
inline std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace ttap
