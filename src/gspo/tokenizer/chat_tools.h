// Tools in the chatml (Qwen3) and qwen2.5 chat formats: JSON written as transformers' `tojson` writes it, the text of
// an assistant's tool calls, and what a tool turn inserts into a running episode. render_chat (chat_template.h)
// renders whole conversations with these pieces.
//
// An episode is token-exact: the prompt's ids, then per assistant turn the ids the model sampled up to its
// <|im_end|>, then tool_turn_ids() of the turn's outputs, and so on; nothing is re-tokenized. It is not the
// tokenization of render_chat() of the same conversation (Qwen3's template is not prefix-preserving): that render
// drops an empty <think> block from every assistant turn but the last (with thinking off, the one each generation
// prompt writes), drops the reasoning of turns before the last user query, and a naive re-tokenization of it reads a
// special-token string in a tool output as the special token. docs/tools.md, "Chat format", lists the cases;
// tests/unit/test_chat_tools.cpp measures them against transformers.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gspo/config/choices.h"
#include "gspo/tokenizer/chat_message.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::config {
struct ToolSpec;  // config/options.h
}

namespace gspo::tokenizer {

// Python's json.dumps(v, ensure_ascii=False), what transformers' `tojson` filter does: ", " and ": " separators,
// keys in their order; non-ASCII, <, >, &, ' and DEL written as they are; ", \ and control characters escaped (\n,
// \r, \t, \b, \f, else \u00XX); floats as Python's repr (1e-05, 1000000000000000.0, 1e+16, NaN, Infinity).
// Invalid UTF-8 in strings becomes U+FFFD.
std::string tojson(const nlohmann::ordered_json& v);

// {"type": "function", "function": {"name": ..., "description": ..., "parameters": ...}}: a tool as the template
// receives it.
nlohmann::ordered_json tool_json(const ChatTool& tool);

// The tools of a config (tools.list): name, description, parameters (its JSON text read in its key order).
std::vector<ChatTool> chat_tools(const std::vector<config::ToolSpec>& specs);

// The system prompt's tools section, from "# Tools" to the closing "</tool_call>" of its example (chatml and qwen2.5
// write the same): one tojson(tool_json(tool)) line per tool inside <tools>...</tools>.
std::string tools_section(const std::vector<ChatTool>& tools);

// The calls of an assistant turn as the template writes them after its content: each
// <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>, a "\n" before every call but the first and, when
// `newline_first`, before the first (chatml: when the content is not empty; qwen2.5: always). ARGS is
// tojson(arguments); chatml writes a string as it is. "" for no calls.
std::string tool_calls_text(config::ChatTemplate format, const std::vector<ChatToolCall>& calls, bool newline_first);

// What the template writes after an assistant turn's <|im_end|> when tool messages holding `outputs` follow it,
// through the next generation prompt: "\n<|im_start|>user" + per output "\n<tool_response>\nOUTPUT\n</tool_response>"
// + "<|im_end|>\n" + (when opts.add_generation_prompt) "<|im_start|>assistant\n" + (chatml with
// enable_thinking false) "<think>\n\n</think>\n\n". chatml and qwen2.5; DataError for other formats or no output.
std::string tool_turn_text(config::ChatTemplate format, const std::vector<std::string>& outputs,
                           const ChatOptions& opts);

// The ids a rollout appends after the assistant's sampled <|im_end|>: tool_turn_text() tokenized with special tokens
// recognised only in the template's own text. The outputs are plain text (Tokenizer::encode_text): a special-token
// string in them ("<|im_end|>", "<|im_start|>") is ordinary text and cannot end the turn or open another. The text
// between two special tokens is encoded as one span, outputs and template text together, as `tokenizers` splits a
// full render, so when no output holds a special-token string the ids equal tok.encode(tool_turn_text(...)) (Qwen3:
// each output with the "\n" around it between the added tokens <tool_response> and </tool_response>; a python
// output "42\n" ends in the one token "\n\n"). A non-special added token in an output (Qwen3's </tool_response>,
// <think>) keeps its id, as in a full render.
std::vector<int64_t> tool_turn_ids(config::ChatTemplate format, const Tokenizer& tok,
                                   const std::vector<std::string>& outputs, const ChatOptions& opts);

// The longest special token of `tok` whose text starts at `pos` of `text` (name and id), or nullptr.
const std::pair<const std::string, int64_t>* special_at(const Tokenizer& tok, const std::string& text, size_t pos);

// The ids of `parts` in order, each (text, trusted): special-token strings are looked for in trusted parts only (the
// template's own text) and map to their ids; everything between two special tokens, trusted text and untrusted text
// (tool outputs) together, is encoded as one plain span (Tokenizer::encode_text), as `tokenizers` splits a full render.
std::vector<int64_t> encode_parts(const Tokenizer& tok, const std::vector<std::pair<std::string, bool>>& parts);

// Python's repr of a float (float_repr_style "short"): the shortest digits that read back, fixed notation unless the
// decimal exponent is below -4 or at least 16; nan, inf, -inf. The chat templates' JSON and Jinja's str() both use it.
std::string python_float_repr(double d);

}  // namespace gspo::tokenizer
