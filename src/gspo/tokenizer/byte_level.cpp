#include "gspo/tokenizer/byte_level.h"

#include <array>
#include <unordered_map>

namespace gspo::tokenizer {
namespace {

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

struct Tables {
  std::array<std::string, 256> fwd;
  std::unordered_map<uint32_t, unsigned char> back;
  Tables() {
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const uint32_t cp = keep ? static_cast<uint32_t>(b) : next++;
      fwd[b] = utf8(cp);
      back[cp] = static_cast<unsigned char>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::string& byte_to_unicode(unsigned char b) { return tables().fwd[b]; }

std::string bytes_to_unicode(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += tables().fwd[b];
  return out;
}

bool unicode_to_bytes(const std::string& token, std::string& out) {
  const auto& back = tables().back;
  for (size_t i = 0; i < token.size();) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    uint32_t cp;
    int len;
    if (c < 0x80) { cp = c; len = 1; }
    else if ((c >> 5) == 6) { cp = c & 0x1F; len = 2; }
    else if ((c >> 4) == 14) { cp = c & 0x0F; len = 3; }
    else return false;
    if (i + len > token.size()) return false;
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(token[i + k]) & 0x3F);
    auto it = back.find(cp);
    if (it == back.end()) return false;
    out += static_cast<char>(it->second);
    i += len;
  }
  return true;
}

}  // namespace gspo::tokenizer
