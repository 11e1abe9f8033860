#include "gspo/env/observation.h"

#include <algorithm>

#include "gspo/tokenizer/byte_level.h"
#include "gspo/tokenizer/utf8.h"

namespace gspo::env {
namespace {

constexpr const char* kZeroWidthSpace = "\xE2\x80\x8B";

std::string valid_utf8(const std::string& s) {
  std::string fixed;
  return tokenizer::replace_invalid_utf8(s, fixed) ? fixed : s;
}

// Each special-token string gets a zero-width space after its first character, until none is left (a break cannot
// make a new one unless a special token holds U+200B; the bound stops that case too).
std::string defang_specials(std::string s, const tokenizer::Tokenizer& tok) {
  for (int round = 0; round < 4; ++round) {
    bool found = false;
    for (const auto& [special, id] : tok.special_tokens()) {
      if (special.size() < 2) continue;
      for (size_t pos = 0; (pos = s.find(special, pos)) != std::string::npos;) {
        s.insert(pos + 1, kZeroWidthSpace);
        pos += special.size() + 3;
        found = true;
      }
    }
    if (!found) break;
  }
  return s;
}

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// A cut through valid UTF-8 leaves at most a partial character at its edge: dropping it (instead of writing U+FFFD)
// keeps the piece within its tokens.
std::string without_partial_end(std::string s) {
  size_t lead = s.size();
  while (lead > 0 && s.size() - lead < 4 && continuation(s[lead - 1])) --lead;
  if (lead > 0 && lead - 1 + tokenizer::utf8_char_len(static_cast<unsigned char>(s[lead - 1])) > s.size())
    s.resize(lead - 1);
  return s;
}
std::string without_partial_start(std::string s) {
  size_t n = 0;
  while (n < s.size() && n < 3 && continuation(s[n])) ++n;
  return s.substr(n);
}

}  // namespace

std::string cut_marker(int64_t tokens_cut) {
  return "\n[... " + std::to_string(tokens_cut) + " tokens cut ...]\n";
}

std::string truncate_observation(const std::string& text, int64_t max_tokens, const tokenizer::Tokenizer& tok) {
  max_tokens = std::max<int64_t>(max_tokens, 1);
  const size_t window = static_cast<size_t>(std::min<int64_t>(max_tokens, int64_t{1} << 40) * kBytesPerToken);
  std::string head_text = text, tail_text;
  int64_t skipped_bytes = 0;  // bytes between the two windows, never tokenized
  if (text.size() > 2 * window) {
    head_text = text.substr(0, window);
    tail_text = text.substr(text.size() - window);
    skipped_bytes = static_cast<int64_t>(text.size() - 2 * window);
  }
  const auto head_ids = tok.encode(defang_specials(valid_utf8(head_text), tok));
  const auto tail_ids = tok.encode(defang_specials(valid_utf8(tail_text), tok));
  const int64_t total = static_cast<int64_t>(head_ids.size() + tail_ids.size());
  if (skipped_bytes == 0 && total <= max_tokens) return tok.decode(head_ids) + tok.decode(tail_ids);

  // Tokens cut: those dropped from the windows, plus the skipped bytes counted at kBytesPerToken (a lower bound).
  const int64_t skipped_tokens = (skipped_bytes + kBytesPerToken - 1) / kBytesPerToken;
  auto marker_for = [&](int64_t kept) { return cut_marker(total - kept + skipped_tokens); };
  std::vector<int64_t> all = head_ids;
  all.insert(all.end(), tail_ids.begin(), tail_ids.end());
  // The marker's tokens are counted at its longest (nothing kept), so its number cannot outgrow the budget.
  const int64_t keep = max_tokens - static_cast<int64_t>(tok.encode(marker_for(0)).size());
  std::string out;
  if (keep < 2) {
    out = without_partial_end(tok.decode({all.begin(), all.begin() + std::min(total, max_tokens)}));
  } else {
    const int64_t head = (keep + 1) / 2, tail = keep - head;
    out = without_partial_end(tok.decode({all.begin(), all.begin() + head})) + marker_for(keep) +
          without_partial_start(tok.decode({all.end() - tail, all.end()}));
  }
  return defang_specials(valid_utf8(out), tok);  // a cut can join what the two sides broke apart
}

}  // namespace gspo::env
