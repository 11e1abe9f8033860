#include "gspo/env/observation.h"

#include <algorithm>

#include "gspo/tokenizer/byte_level.h"
#include "gspo/tokenizer/utf8.h"

namespace gspo::env {
namespace {

std::string valid_utf8(const std::string& s) {
  std::string fixed;
  return tokenizer::replace_invalid_utf8(s, fixed) ? fixed : s;
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

Observation make_observation(const std::string& text, int64_t max_tokens, const tokenizer::Tokenizer& tok) {
  max_tokens = std::max<int64_t>(max_tokens, 1);
  const size_t window = static_cast<size_t>(std::min<int64_t>(max_tokens, int64_t{1} << 40) * kBytesPerToken);
  std::vector<int64_t> all;   // the ids looked at: the whole text's, or the two windows'
  int64_t skipped_bytes = 0;  // bytes between the two windows, never tokenized
  if (text.size() <= 2 * window) {
    Observation whole{valid_utf8(text), {}};
    whole.ids = tok.encode_text(whole.text);
    if (static_cast<int64_t>(whole.ids.size()) <= max_tokens) return whole;
    all = std::move(whole.ids);
  } else {
    all = tok.encode_text(valid_utf8(text.substr(0, window)));
    const auto tail_ids = tok.encode_text(valid_utf8(text.substr(text.size() - window)));
    all.insert(all.end(), tail_ids.begin(), tail_ids.end());
    skipped_bytes = static_cast<int64_t>(text.size() - 2 * window);
  }
  const int64_t total = static_cast<int64_t>(all.size());

  // Tokens cut: those dropped from the windows, plus the skipped bytes counted at kBytesPerToken (a lower bound).
  const int64_t skipped_tokens = (skipped_bytes + kBytesPerToken - 1) / kBytesPerToken;
  auto marker_for = [&](int64_t kept) { return cut_marker(total - kept + skipped_tokens); };
  // The marker's tokens are counted at its longest (nothing kept), so its number cannot outgrow the budget.
  int64_t keep = max_tokens - static_cast<int64_t>(tok.encode_text(marker_for(0)).size());
  bool with_marker = keep >= 2;  // else the head only
  keep = with_marker ? std::min(keep, total) : std::min(total, max_tokens);  // windows of long tokens may hold fewer
  auto cut_at = [&](int64_t kept) {
    std::string out;
    if (with_marker) {
      const int64_t head = (kept + 1) / 2, tail = kept - head;
      out = without_partial_end(tok.decode({all.begin(), all.begin() + head})) + marker_for(kept) +
            without_partial_start(tok.decode({all.end() - tail, all.end()}));
    } else {
      out = without_partial_end(tok.decode({all.begin(), all.begin() + kept}));
    }
    Observation cut{valid_utf8(out), {}};
    cut.ids = tok.encode_text(cut.text);
    return cut;
  };
  // Re-encoding the kept text may merge or split differently next to a cut: keep fewer tokens until it fits. Every
  // round keeps fewer (down to 2 around the marker, then the head only down to nothing), so this ends.
  for (;;) {
    Observation cut = cut_at(keep);
    const int64_t over = static_cast<int64_t>(cut.ids.size()) - max_tokens;
    if (over <= 0) return cut;
    if (keep > (with_marker ? 2 : 0)) {
      keep = std::max<int64_t>(keep - over, with_marker ? 2 : 0);
    } else {
      with_marker = false;
      keep = std::min(total, max_tokens);
    }
  }
}

std::string truncate_observation(const std::string& text, int64_t max_tokens, const tokenizer::Tokenizer& tok) {
  return make_observation(text, max_tokens, tok).text;
}

}  // namespace gspo::env
