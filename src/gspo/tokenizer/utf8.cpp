#include "gspo/tokenizer/utf8.h"

namespace gspo::tokenizer {
namespace {
// Length of the well-formed sequence at `i`, or 0 when it is ill-formed; `bad` is then the length of its maximal
// ill-formed subpart (at least 1), which becomes one U+FFFD.
size_t well_formed(const unsigned char* s, size_t n, size_t i, size_t& bad) {
  const unsigned char b = s[i];
  if (b < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF) len = 2;
  else if (b == 0xE0) len = 3, lo = 0xA0;
  else if (b >= 0xE1 && b <= 0xEC) len = 3;
  else if (b == 0xED) len = 3, hi = 0x9F;  // no surrogates
  else if (b >= 0xEE && b <= 0xEF) len = 3;
  else if (b == 0xF0) len = 4, lo = 0x90;
  else if (b >= 0xF1 && b <= 0xF3) len = 4;
  else if (b == 0xF4) len = 4, hi = 0x8F;  // nothing past U+10FFFF
  bad = 1;
  if (len == 0) return 0;  // continuation byte, C0/C1 (overlong) or F5..FF
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= n) return 0;
    const unsigned char c = s[i + k];
    const bool ok = k == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
    if (!ok) return 0;
    bad = k + 1;  // the prefix read so far: the maximal subpart if the sequence ends early
  }
  return len;
}
}  // namespace

bool replace_invalid_utf8(const std::string& text, std::string& out) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0, bad = 0;
  while (i < n) {
    if (s[i] < 0x80) {
      ++i;
      continue;
    }
    const size_t len = well_formed(s, n, i, bad);
    if (len == 0) break;
    i += len;
  }
  if (i >= n) return false;
  out.assign(text, 0, i);
  while (i < n) {
    const size_t len = well_formed(s, n, i, bad);
    if (len > 0) {
      out.append(text, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      i += bad;
    }
  }
  return true;
}

}  // namespace gspo::tokenizer
