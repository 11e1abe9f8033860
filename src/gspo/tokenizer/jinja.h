// A Jinja interpreter for chat templates: the subset that Hugging Face tokenizers' `chat_template`s use, rendered as
// transformers' apply_chat_template renders them (jinja2's ImmutableSandboxedEnvironment with trim_blocks and
// lstrip_blocks, the loopcontrols extension, its own `tojson`, `raise_exception`, `strftime_now`, `namespace` and
// `dict`), so that a prompt is the same text the peer trainers give the model.
//
// Supported: {{ }}, {% if/elif/else %}, {% for %} (loop.*, `else`, an inline `if`, tuple targets, break/continue),
// {% set %} (names, tuples, namespace attributes, {% set x %}...{% endset %}), {% macro %}, {% generation %} (a
// plain block, as without return_assistant_tokens_mask), whitespace control and comments. Expressions: literals,
// attribute/item access and slices, arithmetic, ~, comparisons, and/or/not, in, conditional expressions, the usual
// tests and filters and Python's str/dict methods that templates call. Values render as Python's str() does
// (None, True, ['a', 1], 1.0). Anything outside the subset (an unknown filter, test, method or tag) throws a
// TemplateError naming the template and line; nothing is skipped silently.
//
// Non-goals: autoescaping, template inheritance and includes, call blocks, recursive loops, the `%` string operator.
#pragma once
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "gspo/core/error.h"

namespace gspo::tokenizer::jinja {

// A template that does not parse, uses something outside the supported subset, or fails while rendering
// (raise_exception, a value of the wrong type). The message starts with "ORIGIN:LINE: ".
class TemplateError : public ConfigError {
 public:
  using ConfigError::ConfigError;
  const char* kind() const noexcept override { return "template error"; }
};

struct Program;  // the parsed template (jinja_detail.h)

class ChatJinja {
 public:
  // Parses `source` once; `origin` (a file name) prefixes every error. Throws TemplateError on a syntax error or an
  // unsupported tag.
  ChatJinja(std::string source, std::string origin);

  // Renders with `context` as the template's variables (an object). Objects keep their key order (ordered_json), as
  // Python dicts do: tojson and items() write them in that order.
  std::string render(const nlohmann::ordered_json& context) const;

  // The clock strftime_now() formats: tests fix it; unset, the local time at each render.
  void set_now(const std::tm& now) { now_ = now; }

  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::shared_ptr<const Program> program_;
  std::optional<std::tm> now_;
};

// transformers' render_jinja_template for one conversation: the template sees `messages` (each message with a
// reasoning field, "reasoning_content", "thinking" or "reasoning", also gets "thinking" first and
// "reasoning_content" last, as transformers aliases them), `tools` (null when none), `documents` (null),
// `add_generation_prompt`, and every key of `extra` (bos_token, eos_token, enable_thinking, date_string, ...).
std::string apply_chat_template(const ChatJinja& tmpl, const nlohmann::ordered_json& messages,
                                bool add_generation_prompt, const nlohmann::ordered_json& tools = nullptr,
                                const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());

}  // namespace gspo::tokenizer::jinja
