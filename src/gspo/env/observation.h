// What a tool's output becomes before it enters a rollout: text that is valid UTF-8, holds no special-token string of
// the tokenizer (so a tool cannot end a turn or forge an assistant turn: "<|im_end|>" is written "<\u200b|im_end|>"),
// and fits a token budget, its head and tail kept around a marker saying how much was cut. Any bytes in (invalid
// UTF-8, NUL, megabytes); never throws for content.
#pragma once
#include <cstdint>
#include <string>

#include "gspo/tokenizer/tokenizer.h"

namespace gspo::env {

// Inserted between head and tail: "\n[... 1234 tokens cut ...]\n".
std::string cut_marker(int64_t tokens_cut);

// Tokens of the input looked at before counting: a longer output keeps its first and last kBytesPerToken *
// max_tokens bytes (a token is at most this long in practice), so megabytes are not tokenized in full.
constexpr int64_t kBytesPerToken = 32;

// `text` made safe (UTF-8 repaired to U+FFFD, special-token strings broken with a zero-width space) and cut to at
// most `max_tokens` tokens of `tok` including the marker: the first half and the last half of the kept tokens. A
// budget too small for the marker keeps the head only. A character split by a cut is dropped. Re-encoding the result
// gives the kept ids again for a byte tokenizer; a BPE one may merge differently next to a cut (a token or so).
// `max_tokens` >= 1.
std::string truncate_observation(const std::string& text, int64_t max_tokens, const tokenizer::Tokenizer& tok);

}  // namespace gspo::env
