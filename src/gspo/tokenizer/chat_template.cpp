#include "gspo/tokenizer/chat_template.h"

#include "gspo/core/error.h"

namespace gspo::tokenizer {

std::string render_chatml(const std::vector<ChatMessage>& messages, const ChatOptions& opts) {
  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    if (m.role != "system" && m.role != "user" && m.role != "assistant")
      throw DataError("chat message " + std::to_string(i) + ": role must be system, user or assistant (got '" + m.role + "')");
    if (m.role == "system" && i != 0) throw DataError("chat message " + std::to_string(i) + ": a system message must come first");
    out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  }
  if (opts.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!opts.enable_thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

}  // namespace gspo::tokenizer
