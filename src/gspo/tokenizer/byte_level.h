// GPT-2's byte <-> unicode mapping used by byte-level BPE: every byte maps to a printable code point (bytes
// 33-126, 161-172 and 174-255 to themselves, the other 68 to 256, 257, ... in order).
#pragma once
#include <string>

namespace gspo::tokenizer {

// UTF-8 of the code point byte `b` maps to.
const std::string& byte_to_unicode(unsigned char b);
// Maps every byte of `bytes` (concatenating the UTF-8 of the code points).
std::string bytes_to_unicode(const std::string& bytes);
// Inverse: a byte-level token string back to raw bytes; false when it holds a code point outside the mapping.
bool unicode_to_bytes(const std::string& token, std::string& out);

}  // namespace gspo::tokenizer
