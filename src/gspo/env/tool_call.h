// Tool calls in an assistant turn, as Qwen3/Hermes chat templates have the model write them:
//   <tool_call>
//   {"name": "python", "arguments": {"code": "print(1)"}}
//   </tool_call>
// Everything a model writes is hostile input: a block that is not a well-formed call is returned as a failure with
// its reason (it becomes an observation the model sees), never thrown. Other families' syntaxes (Llama 3.x JSON, Mistral
// [TOOL_CALLS]) are read in call_syntax.h. Non-goal: rendering tools into a prompt (the chat template's job).
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gspo::env {

inline constexpr const char* kCallOpen = "<tool_call>";
inline constexpr const char* kCallClose = "</tool_call>";

// One <tool_call> block: a call (name and an object of arguments) or why it is none.
struct ToolCall {
  std::string name;                                      // as written; valid UTF-8 when ok()
  std::string id;                                        // the call's own id when the format writes one (Mistral)
  nlohmann::json arguments = nlohmann::json::object();   // always an object when ok()
  std::string error;                                     // "" for a call; else the reason, one phrase
  bool ok() const { return error.empty(); }
};

constexpr size_t kMaxCallBytes = 1 << 20;  // a block's body longer than this is refused unparsed
constexpr int kMaxCallDepth = 64;          // JSON nesting deeper than this is refused unparsed

// Every block of `text` in order: each <tool_call> up to the next </tool_call>, and a last one left open (an
// "unterminated" failure). A stray </tool_call> is ignored. Arguments may be absent (an empty object). Never throws
// on any bytes; O(text).
std::vector<ToolCall> parse_tool_calls(const std::string& text);

// One call written as a JSON object {"name": ..., ARGS: {...}} where ARGS is the first key of `argument_keys` present
// (absent: an empty object), and an "id" string when there is one: a call, or a failure saying why (empty, too long
// or too deep, not JSON, not an object, no name, arguments not an object). Never throws.
ToolCall parse_call_json(const std::string& body, const std::vector<std::string>& argument_keys = {"arguments"});

}  // namespace gspo::env
