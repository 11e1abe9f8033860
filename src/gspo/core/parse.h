// Whole-string number parsing shared by the config loader, command-line flags and launcher variables.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace gspo {

// The base-10 integer `text` spells in full ("12"; not "12x", "", "1e3"), or nothing.
inline std::optional<int64_t> parse_int(const std::string& text) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used, 10);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size()) return std::nullopt;
  return v;
}

}  // namespace gspo
