#include "gspo/reward/math/math_text.h"

namespace gspo::reward {

std::optional<std::string> brace_group(const std::string& s, size_t open, size_t* end) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '{') ++depth;
    if (s[i] == '}' && --depth == 0) {
      if (end) *end = i + 1;
      return s.substr(open + 1, i - open - 1);
    }
  }
  return std::nullopt;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
}

}  // namespace gspo::reward
