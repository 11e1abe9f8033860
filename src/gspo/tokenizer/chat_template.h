// Chat formatting of prompts. One format is built in: ChatML as the Qwen2 / Qwen2.5 / Qwen3 families use it
//   <|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n
// with Qwen3's switch for disabled thinking (an empty <think></think> block after the generation prompt).
// For plain system/user/assistant messages the output equals rendering Qwen3's tokenizer_config.json Jinja
// template (tested against jinja2); tools, tool calls and reasoning_content of that template are not covered.
#pragma once
#include <string>
#include <vector>

namespace gspo::tokenizer {

struct ChatMessage {
  std::string role;     // system, user or assistant
  std::string content;
};

struct ChatOptions {
  bool add_generation_prompt = true;  // end with the assistant header the model continues from
  bool enable_thinking = true;        // false: append "<think>\n\n</think>\n\n" (Qwen3 non-thinking mode)
};

// Throws DataError for an unknown role or a system message that is not first.
std::string render_chatml(const std::vector<ChatMessage>& messages, const ChatOptions& opts);

}  // namespace gspo::tokenizer
