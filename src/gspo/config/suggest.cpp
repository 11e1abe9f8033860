#include "gspo/config/suggest.h"

#include <algorithm>
#include <numeric>

namespace gspo::config {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  std::iota(prev.begin(), prev.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = word.size() / 3 + 2;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d <= best_d && (best.empty() || d < best_d)) {
      best = c;
      best_d = d;
    }
  }
  return best;
}

}  // namespace gspo::config
