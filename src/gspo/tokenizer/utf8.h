// UTF-8 validation and repair for text about to be tokenized. Hugging Face's tokenizers take Unicode strings, so
// bytes that are not UTF-8 reach them only after a lossy decode; gspo's HF tokenizer repairs its input the same way
// so that its ids equal `tokenizers`' on the decoded text (tests/golden/tokenizer_reference.py).
#pragma once
#include <string>

namespace gspo::tokenizer {

// False when `text` is well-formed UTF-8 (Unicode Table 3-7: no overlongs, surrogates or code points past
// U+10FFFF) and `out` is left alone. Otherwise writes `text` to `out` with each maximal ill-formed subsequence
// replaced by U+FFFD (the standard's recommended practice; what Python's errors="replace" and Rust's
// String::from_utf8_lossy do) and returns true. O(bytes).
bool replace_invalid_utf8(const std::string& text, std::string& out);

}  // namespace gspo::tokenizer
