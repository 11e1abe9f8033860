// Chat formatting of prompts, in the formats of the model families gspo trains, each equal to transformers'
// apply_chat_template with that family's own Jinja template for plain system/user/assistant conversations (tested:
// tests/golden/chat_template_reference.py renders the oracle with transformers). Tools, tool calls and
// reasoning_content fields of those templates are not covered.
//   chatml       Qwen3: <|im_start|>{role}\n{content}<|im_end|>\n ... <|im_start|>assistant\n, with Qwen3's
//                thinking switch (enable_thinking = false appends an empty <think>\n\n</think>\n\n) and its
//                handling of <think> blocks in assistant turns (dropped from turns before the last user query).
//   qwen2.5      Qwen2.5-Instruct: ChatML, with Qwen2.5's default system prompt when none is given; no thinking.
//   deepseek_r1  DeepSeek-R1-Distill-Qwen: <｜begin▁of▁sentence｜>{system}<｜User｜>{user}<｜Assistant｜>{answer}
//                <｜end▁of▁sentence｜>...; the generation prompt opens a thought (<｜Assistant｜><think>\n) whatever
//                enable_thinking says, as the template does; <think> blocks of earlier answers are dropped.
#pragma once
#include <string>
#include <vector>

#include "gspo/config/choices.h"

namespace gspo::tokenizer {

struct ChatMessage {
  std::string role;     // system, user or assistant
  std::string content;
};

struct ChatOptions {
  bool add_generation_prompt = true;  // end with the assistant header the model continues from
  bool enable_thinking = true;        // chatml (Qwen3) only: false appends "<think>\n\n</think>\n\n"
};

// Renders `messages` in `format` (not kNone). Throws DataError for an unknown role or a system message that is not
// first.
std::string render_chat(config::ChatTemplate format, const std::vector<ChatMessage>& messages, const ChatOptions& opts);

// render_chat(config::ChatTemplate::kChatml, ...).
std::string render_chatml(const std::vector<ChatMessage>& messages, const ChatOptions& opts);

}  // namespace gspo::tokenizer
