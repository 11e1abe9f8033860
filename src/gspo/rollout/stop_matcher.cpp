#include "gspo/rollout/stop_matcher.h"

#include "gspo/tokenizer/tokenizer.h"

namespace gspo::rollout {

StopMatcher::StopMatcher(std::vector<std::string> stops, const tokenizer::Tokenizer& tok)
    : stops_(std::move(stops)), tok_(tok) {}

void StopMatcher::append(std::string& text, int64_t id) const { text += tok_.token_bytes(id, /*with_special=*/false); }

bool StopMatcher::append_and_match(std::string& text, int64_t id) const {
  const size_t before = text.size();
  append(text, id);
  for (const auto& s : stops_) {
    if (text.size() < s.size()) continue;
    const size_t from = before >= s.size() - 1 ? before - (s.size() - 1) : 0;
    if (text.find(s, from) != std::string::npos) return true;
  }
  return false;
}

}  // namespace gspo::rollout
