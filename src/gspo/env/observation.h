// What a tool's output becomes before it enters a rollout: the tool's text, its invalid UTF-8 repaired to U+FFFD and
// nothing else changed, cut to a token budget keeping its head and tail around a marker saying how much was cut.
// It is plain text: counted and encoded with Tokenizer::encode_text, as tokenizer::tool_turn_ids (chat_tools.h)
// inserts it, so a special-token string in it ("<|im_end|>", "<|im_start|>") is ordinary text and cannot end the turn
// or forge an assistant turn. Never tokenize an observation with Tokenizer::encode, which would read those strings as
// the special tokens. Any bytes in (invalid UTF-8, NUL, megabytes); never throws for content.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gspo/tokenizer/tokenizer.h"

namespace gspo::env {

// Inserted between head and tail: "\n[... 1234 tokens cut ...]\n".
std::string cut_marker(int64_t tokens_cut);

// Tokens of the input looked at before counting: a longer output keeps its first and last kBytesPerToken *
// max_tokens bytes (a token is at most this long in practice), so megabytes are not tokenized in full.
constexpr int64_t kBytesPerToken = 32;

struct Observation {
  std::string text;          // valid UTF-8: the tool's text, or its head, cut_marker() and its tail
  std::vector<int64_t> ids;  // tok.encode_text(text), at most max_tokens: what the observation costs alone
};

// `text` made valid UTF-8 and, past `max_tokens` tokens of `tok` (encode_text), cut to its first and last tokens
// around a marker, the marker counted in the budget: ids.size() <= max_tokens always. A budget too small for the
// marker keeps the head only. A character split by a cut is dropped. Cut text is the decode of the kept tokens
// (NFC-normalised by a Hugging Face tokenizer), re-encoded for `ids`; if re-encoding next to a cut grows past the
// budget, fewer tokens are kept. Inserted into an episode by tool_turn_ids, the text is encoded again together with
// the "\n" around it, which may merge a token at each edge (Qwen3: an output's final "\n" and the template's
// "\n" become "\n\n"). `max_tokens` >= 1 (smaller values count as 1).
Observation make_observation(const std::string& text, int64_t max_tokens, const tokenizer::Tokenizer& tok);

// make_observation(...).text.
std::string truncate_observation(const std::string& text, int64_t max_tokens, const tokenizer::Tokenizer& tok);

}  // namespace gspo::env
