#include "gspo/config/origin.h"

namespace gspo::config {

std::string where_set(const Config& c, const std::string& key) {
  auto it = c.origin.find(key);
  if (it != c.origin.end()) return it->second;
  const auto dot = key.rfind('.'), bracket = key.rfind(']');
  if (dot != std::string::npos && bracket != std::string::npos && bracket < dot)
    if (auto item = c.origin.find(key.substr(0, dot)); item != c.origin.end()) return item->second;
  return "<default>";
}

}  // namespace gspo::config
