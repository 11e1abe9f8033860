// How tools appear in an episode's tokens: which token ends an assistant turn, how the calls of a turn are read from
// its text, and which tokens an observation inserts after the turn (through the next assistant header).
//   hermes   Qwen3/Hermes (chat templates chatml and qwen2.5): calls are <tool_call>{"name": ..., "arguments": ...}
//            </tool_call> blocks, the turn ends with <|im_end|>, results come back as <tool_response> blocks of a user
//            turn, rendered as the chat template renders them (docs/tools.md).
//   compact  byte-level tiny models (chat template none), which cannot write JSON: a call is [BODY], and its ']' is the
//            turn token, so a turn holds one call and ends the moment it is closed. BODY (from the turn's last '[')
//            "NAME TEXT" whose first word names a tool calls it with {"input": TEXT}; any other BODY calls the first
//            tool with {"input": BODY}; an empty [] passes the question (the prompt) as the input; a ']' without '['
//            is a failed call. The result comes back as {OUTPUT}, after which the model writes on; EOS ends the
//            episode.
//   template the model's own Jinja chat template (data.chat_template auto): calls in the syntax the template writes
//            them in (env/call_syntax.h: hermes, llama3_json, mistral), the turn ended by the token that ends the
//            template's assistant messages, and the results written as the template writes tool messages after a call
//            turn (tokenizer/template_tools.h), checked at start-up by a probe render.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/env/tool_call.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::env {

class ToolFormat {
 public:
  virtual ~ToolFormat() = default;
  virtual const char* name() const = 0;
  // The token that ends an assistant turn (the model's own token).
  virtual int64_t turn_token() const = 0;
  // The calls of one assistant turn (its text without the turn token; with special tokens written when
  // reads_special()); `question` is the episode's prompt text. Never throws on content: a malformed call is a
  // ToolCall with its error.
  virtual std::vector<ToolCall> calls(const std::string& turn_text, const std::string& question) const = 0;
  // Whether calls() reads the turn decoded with its special tokens (Mistral's [TOOL_CALLS], Llama's <|python_tag|>).
  virtual bool reads_special() const { return false; }
  // The tokens written after the turn token for the turn's observations (one per call, in order); `calls` are the
  // turn's calls as calls() gave them (the template format shows the template their ids and names; empty: made up).
  virtual std::vector<int64_t> observation(const std::vector<std::string>& outputs,
                                           const std::vector<ToolCall>& calls) const = 0;
  std::vector<int64_t> observation(const std::vector<std::string>& outputs) const { return observation(outputs, {}); }
};

// The format of `cfg` (hermes for chat templates chatml and qwen2.5, compact for none, template for auto).
// `tool_names` in order: a compact call without a tool name goes to the first. ConfigError when the tokenizer lacks
// the format's tokens (hermes: <|im_start|>, <|im_end|>), the chat template has no tool format (deepseek_r1), or the
// model's own template writes calls in no syntax gspo reads or fails the probe (template_tools.h), naming it.
std::unique_ptr<ToolFormat> make_tool_format(const config::Config& cfg, const tokenizer::Tokenizer& tok,
                                             std::vector<std::string> tool_names);

// compact's parser, alone: the call of a turn that ended with ']' (`turn` without it).
ToolCall parse_compact_call(const std::string& turn, const std::vector<std::string>& tool_names,
                            const std::string& question);

}  // namespace gspo::env
