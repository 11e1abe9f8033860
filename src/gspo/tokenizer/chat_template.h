// Chat formatting of prompts and conversations, in the formats of the model families gspo trains, each equal to
// transformers' apply_chat_template with that family's own Jinja template (tested:
// tests/golden/chat_template_reference.py renders the oracle with transformers): system/user/assistant conversations
// in all three formats, and in chatml and qwen2.5 also tools (their JSON schemas in the system prompt), assistant tool
// calls and tool responses (role "tool"). chat_tools.h holds the pieces of the tool rendering and the tokens a tool
// turn inserts into a running episode. Not covered: tools in deepseek_r1.
//   chatml       Qwen3: <|im_start|>{role}\n{content}<|im_end|>\n ... <|im_start|>assistant\n, with Qwen3's
//                thinking switch (enable_thinking = false appends an empty <think>\n\n</think>\n\n) and its
//                handling of <think> blocks in assistant turns (dropped from turns before the last user query, and
//                an empty one dropped from every turn but the last; an assistant message's reasoning_content field,
//                when given, is its reasoning and its content is kept whole). With tools: a system turn "{system}\n\n# Tools
//                ... <tools>\n{tool json}...\n</tools> ...", calls as <tool_call>\n{"name": ..., "arguments": ...}\n
//                </tool_call> after the content, and consecutive tool messages as one user turn of
//                \n<tool_response>\n{output}\n</tool_response> blocks.
//   qwen2.5      Qwen2.5-Instruct: ChatML, with Qwen2.5's default system prompt when none is given; no thinking; tools,
//                calls and responses as chatml.
//   deepseek_r1  DeepSeek-R1-Distill-Qwen: <｜begin▁of▁sentence｜>{system}<｜User｜>{user}<｜Assistant｜>{answer}
//                <｜end▁of▁sentence｜>...; the generation prompt opens a thought (<｜Assistant｜><think>\n) whatever
//                enable_thinking says, as the template does; <think> blocks of earlier answers are dropped.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "gspo/config/choices.h"
#include "gspo/tokenizer/chat_message.h"

namespace gspo::tokenizer {

// Renders `messages` with `tools` (shown when not empty) in `format` (not kNone). Throws DataError for an unknown
// role, a system message that is not first, tool calls on a message that is not the assistant's, or tools, tool
// calls or tool messages in deepseek_r1.
std::string render_chat(config::ChatTemplate format, const std::vector<ChatMessage>& messages, const ChatOptions& opts,
                        const std::vector<ChatTool>& tools = {});

// render_chat(config::ChatTemplate::kChatml, ...).
std::string render_chatml(const std::vector<ChatMessage>& messages, const ChatOptions& opts);

}  // namespace gspo::tokenizer
