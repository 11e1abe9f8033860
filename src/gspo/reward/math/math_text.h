// The text primitives the math files share below their own concerns (extraction, normalisation, shapes): brace
// groups, replacing text, the longest answer. A leaf: it includes no other math file, so those can all use it.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

namespace gspo::reward {

// An answer longer than this is none: extracted or given, it is never normalised (the normaliser's regexes recurse
// per character).
inline constexpr size_t kMaxAnswerChars = 1000;

// The content of the brace group opening at s[open] == '{' (nested braces), or nullopt when unbalanced; *end is
// set past its closing brace.
std::optional<std::string> brace_group(const std::string& s, size_t open, size_t* end = nullptr);

// Every occurrence of `from` in `s` replaced by `to`, left to right.
void replace_all(std::string& s, const std::string& from, const std::string& to);

}  // namespace gspo::reward
