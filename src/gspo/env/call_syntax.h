// How a model family writes its tool calls, for tool episodes rendered with the model's own chat template
// (data.chat_template auto). The syntax is read off the template (what its tool-call branch writes):
//   hermes      Qwen2.5/Qwen3/QwQ, Hermes: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call> blocks
//               (tool_call.h), any number per turn, after any text.
//   llama3_json Llama 3.1/3.2/3.3: the turn is one JSON object {"name": ..., "parameters": {...}} ("arguments" also
//               read), optionally after <|python_tag|>; a turn whose text does not start with '{' is an answer.
//   mistral     Mistral/Mixtral (v3 and Tekken): [TOOL_CALLS] followed by a JSON array of {"name", "arguments", "id"}
//               objects, or (Mistral Small 3.2 and later) one or more [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}
//               blocks, [CALL_ID]ID optional; text before the first [TOOL_CALLS] is the turn's content.
// Everything a model writes is hostile input: a call that cannot be read is a ToolCall with its error (an observation
// the model sees), never a throw.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "gspo/env/tool_call.h"

namespace gspo::env {

enum class CallSyntax { kHermes, kLlama3Json, kMistral };

const char* call_syntax_name(CallSyntax s);

// The syntax the template `source` writes assistant tool calls in, or nullopt when it writes none of them
// (Gemma, Phi, DeepSeek-R1-Distill: no tool calls at all; Granite, Command R, Kimi K2, gpt-oss: other syntaxes).
std::optional<CallSyntax> detect_call_syntax(const std::string& source);

// The calls of one assistant turn's text (its turn token left out; special tokens written as text).
std::vector<ToolCall> parse_calls(CallSyntax s, const std::string& turn);

std::vector<ToolCall> parse_llama3_calls(const std::string& turn);
std::vector<ToolCall> parse_mistral_calls(const std::string& turn);

}  // namespace gspo::env
