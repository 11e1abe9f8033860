// A conversation as the chat formats read it (chat_template.h renders it, chat_tools.h writes its tools and tool
// calls): messages, an assistant's tool calls, the tools shown to the model, and the rendering options.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gspo::tokenizer {

// One call an assistant message makes.
struct ChatToolCall {
  std::string name;                                                     // written as it is
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();  // written by tojson (chat_tools.h); chatml
                                                                        // writes a string value as it is
};

struct ChatMessage {
  std::string role;                           // system, user, assistant, or tool (chatml, qwen2.5)
  std::string content;
  std::vector<ChatToolCall> tool_calls = {};  // assistant messages only (chatml, qwen2.5)
  // Assistant messages: the reasoning as its own field (transformers' message key). chatml (Qwen3) writes it in the
  // <think> block instead of splitting one off the content; qwen2.5 and deepseek_r1 ignore it, as their templates do.
  std::optional<std::string> reasoning_content = std::nullopt;
};

// A tool shown to the model in the system prompt, as {"type": "function", "function": {"name": ..., "description":
// ..., "parameters": ...}}.
struct ChatTool {
  std::string name;
  std::string description;
  nlohmann::ordered_json parameters = nlohmann::ordered_json::object();  // JSON schema, keys in the user's order
};

struct ChatOptions {
  bool add_generation_prompt = true;  // end with the assistant header the model continues from
  bool enable_thinking = true;        // chatml (Qwen3) only: false appends "<think>\n\n</think>\n\n"
};

}  // namespace gspo::tokenizer
