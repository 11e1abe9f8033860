// GPT-2's byte <-> unicode mapping used by byte-level BPE: every byte maps to a printable code point (bytes
// 33-126, 161-172 and 174-255 to themselves, the other 68 to 256, 257, ... in order).
#pragma once
#include <string>

namespace gspo::tokenizer {

// Length of the UTF-8 sequence that starts with byte `c` (1 for a stray continuation or invalid byte).
inline size_t utf8_char_len(unsigned char c) {
  return c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
}

// UTF-8 of the code point byte `b` maps to.
const std::string& byte_to_unicode(unsigned char b);
// Maps every byte of `bytes` (concatenating the UTF-8 of the code points).
std::string bytes_to_unicode(const std::string& bytes);
// Inverse: a byte-level token string back to raw bytes; false when it holds a code point outside the mapping.
bool unicode_to_bytes(const std::string& token, std::string& out);

}  // namespace gspo::tokenizer
