// Tool turns through a model's own Jinja chat template (data.chat_template auto): what the template writes after an
// assistant turn that made calls, through the next generation prompt, found by rendering the template itself, so any
// family's tool turn (Qwen's user turn of <tool_response> blocks, Llama 3.x's ipython turn, Mistral's [TOOL_RESULTS])
// is inserted into a running episode exactly as transformers' apply_chat_template would write it.
//
// How: the template renders [user, assistant with the turn's calls, one tool message per call] with a generation
// prompt. The call turn starts where that render departs from the prompt's ([user] with a generation prompt) and ends
// at the next turn token (the token that ends the template's assistant messages, found by a probe: "<|im_end|>",
// "<|eot_id|>", "</s>"); what follows it is the inserted text. The prefix check: the conversation rendered again after
// the tool turn must extend what the policy saw (the prompt and its call turn); where a template rewrites them (Qwen3
// drops the empty think block of an earlier turn, Hermes-3 writes a tool message differently once another follows),
// prefix_note() says at which character and how, and the episode keeps the tokens the policy sampled. The tool
// messages carry sentinel outputs, so the template's own text and the outputs' places are known; each output is then
// written in the form the template writes it (as it is, Python-stripped, or JSON-escaped inside quotes, as Llama 3.x's
// `tojson` does; found by a probe with a tricky output and checked). The template is shown each call's id and name,
// never its arguments, which only the assistant's own (already sampled) text holds: so what is inserted depends on
// nothing the model wrote but the number of calls, their ids (Mistral: nine letters or digits, else a made-up one)
// and the names of configured tools.
//
// Non-goals: templates that change a tool's output beyond those forms (refused at the probe), conversations whose
// earlier turns the template rewrites (the episode keeps the tokens the policy sampled; docs/tools.md).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gspo/tokenizer/jinja.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::tokenizer {

// What the template is shown of one call of the turn.
struct TurnCall {
  std::string id;    // the call's id (Mistral's nine characters); "" gets a made-up one
  std::string name;  // a configured tool's name, or a placeholder for a call to none
};

class TemplateToolTurns {
 public:
  enum class OutputForm { kAsIs, kTrimmed, kJsonString };

  // Probes `tmpl` (rendered with `extra`: bos_token, eos_token, enable_thinking, ...) against `tok`, which must
  // outlive this. ConfigError naming the template's origin when its assistant turn does not end with a special token
  // of `tok`, it cannot render a tool turn after a call (its own error and line included), no turn token closes a
  // call turn holding its call, or it writes an output in a form not listed above.
  // `tools` (transformers' list of {"type": "function", "function": {...}}, or null) is shown in every render, as
  // some templates require (Hermes-3 iterates it unconditionally); it changes only the prompt's part.
  TemplateToolTurns(const jinja::ChatJinja& tmpl, nlohmann::ordered_json extra, const Tokenizer& tok,
                    nlohmann::ordered_json tools = nullptr);

  int64_t turn_token() const { return turn_token_; }
  const std::string& turn_end() const { return turn_end_; }  // what follows an assistant message's text ("<|eot_id|>")
  // The most calls one turn may hold: 1 when the template refuses two (Llama 3.x), else unbounded.
  int64_t max_calls() const { return max_calls_; }
  OutputForm output_form() const { return form_; }
  // "" when the conversation rendered again after a tool turn extends what the policy saw; else where it breaks.
  const std::string& prefix_note() const { return prefix_note_; }

  // The text after the turn token through the next generation prompt, as (text, trusted) parts: the template's text
  // trusted, the outputs (written in output_form()) not. calls.size() == outputs.size() >= 1, at most max_calls().
  // DataError if the template fails on these calls (it passed the probe on one, and on two unless max_calls() is 1).
  std::vector<std::pair<std::string, bool>> parts(const std::vector<TurnCall>& calls,
                                                  const std::vector<std::string>& outputs) const;
  std::string text(const std::vector<TurnCall>& calls, const std::vector<std::string>& outputs) const;
  // parts() encoded by encode_parts (chat_tools.h): special tokens in the template's text only.
  std::vector<int64_t> ids(const std::vector<TurnCall>& calls, const std::vector<std::string>& outputs) const;

  // The id the template is shown for call `index` of a turn whose model-written id is `written`: `written` when it is
  // nine ASCII letters or digits (what Mistral's templates demand), else "call" + five digits.
  static std::string call_id(const std::string& written, size_t index);

 private:
  struct Skeleton {
    std::vector<std::string> text;  // outputs.size() + 1 pieces of template text around the outputs
  };
  Skeleton skeleton(const std::vector<TurnCall>& calls) const;
  std::string render_turn(const std::vector<TurnCall>& calls, const std::vector<std::string>& outputs,
                          bool with_results) const;
  void probe_turn_end();
  void probe_form();
  void check_prefix();

  const jinja::ChatJinja& tmpl_;
  nlohmann::ordered_json extra_;
  const Tokenizer& tok_;
  nlohmann::ordered_json tools_;
  int64_t turn_token_ = -1;
  std::string turn_token_text_, turn_end_;
  std::string prompt_;  // [user "Hi"] with a generation prompt
  std::string prefix_note_;
  int64_t max_calls_ = 1;
  OutputForm form_ = OutputForm::kAsIs;
};

const char* output_form_name(TemplateToolTurns::OutputForm f);

}  // namespace gspo::tokenizer
