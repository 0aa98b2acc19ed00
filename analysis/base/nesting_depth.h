// A guard for recursive parsers: the bracket nesting of JSON or TOML text, measured without
// parsing, so a message of 200,000 '[' is refused with an error instead of overflowing the stack
// of nlohmann::json or cpptoml (both recurse once per level, and so does freeing the result).
// Used by the language server's reader, the config loader and the LLM client before they parse.
// Header-only, no allocation.
#pragma once

#include <cstddef>
#include <string_view>

namespace ttap {

enum class TextSyntax { kJson, kToml };

// The deepest nesting we parse: far beyond any real message, settings file or model reply,
// far below what a thread's stack holds.
constexpr int kMaxJsonNesting = 512;
constexpr int kMaxTomlNesting = 128;

// True when |text| nests '[' / '{' deeper than |limit| outside strings (JSON: "..." with
// escapes; TOML also '...' literals, """ / ''' multi-line strings and # comments). Stops at the
// first level past |limit|. Unbalanced or malformed text is the parser's to report.
inline bool NestingExceeds(std::string_view text, int limit, TextSyntax syntax) {
  const bool toml = syntax == TextSyntax::kToml;
  int depth = 0;
  const size_t n = text.size();
  for (size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '"' || (toml && c == '\'')) {
      const bool escapes = c == '"';
      const bool triple = toml && i + 2 < n && text[i + 1] == c && text[i + 2] == c;
      i += triple ? 3 : 1;
      for (; i < n; ++i) {
        if (escapes && text[i] == '\\') {
          ++i;  // the escaped character
          continue;
        }
        if (text[i] != c) continue;
        if (!triple) break;
        if (i + 2 < n && text[i + 1] == c && text[i + 2] == c) {
          i += 2;
          break;
        }
      }
      continue;
    }
    if (toml && c == '#') {
      while (i < n && text[i] != '\n') ++i;
      continue;
    }
    if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace ttap
