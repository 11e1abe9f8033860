// One prompt with its reference answer, as every task and dataset yields it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gspo::data {

// One message of a prompt given as a conversation (TRL's conversational format, verl's `prompt` column).
struct PromptMessage {
  std::string role;     // system, user or assistant (as the chat template knows them)
  std::string content;
};

struct Example {
  std::string id;       // "file.jsonl:LINE" or "arithmetic:N"
  std::string prompt;   // the problem text, before the prompt template is applied (a conversation: its last user turn)
  std::string answer;   // reference answer (exact string, e.g. "017" stays "017")
  std::string row;      // the raw JSON row (empty for built-in tasks), for external verifiers
  std::string difficulty;  // the row's 'difficulty' (LiveCodeBench: easy, medium, hard); "" = none
  std::string date;        // the row's 'contest_date' as YYYY-MM-DD (LiveCodeBench); "" = none
  // The prompt as a list of chat messages, rendered whole by the chat template (data.prompt_template applies to its
  // last user turn); empty = `prompt` is the one user turn.
  std::vector<PromptMessage> messages = {};
  std::string source = {};   // the row's data.source_key field (verl's data_source); "" = none
  int64_t source_id = -1;    // its place in the run's sorted source names (number_sources); -1 = none or unnumbered
  int64_t dataset = 0;  // its dataset's index in data.mix (0 without a mix)
};

// Applies data.prompt_template: every "{prompt}" is replaced by `prompt`.
std::string apply_template(const std::string& tmpl, const std::string& prompt);

}  // namespace gspo::data

namespace gspo::config { struct DataOptions; }
namespace gspo::tokenizer { struct ChatTool; }

namespace gspo::data {

// The text given to the tokenizer for `problem`: data.prompt_template applied, then the chat format
// (data.chat_template, system_prompt, enable_thinking) when one is set, its system message listing `tools` (the
// tools of a multi-turn run, tokenizer/chat_tools.h; chat formats only).
std::string format_prompt(const config::DataOptions& opts, const std::string& problem,
                          const std::vector<tokenizer::ChatTool>& tools);
std::string format_prompt(const config::DataOptions& opts, const std::string& problem);  // no tools
// The row's prompt: its messages when it has them (a system message of the row's own is kept, else
// data.system_prompt's is put first), else format_prompt of its text.
std::string format_prompt(const config::DataOptions& opts, const Example& ex,
                          const std::vector<tokenizer::ChatTool>& tools);
std::string format_prompt(const config::DataOptions& opts, const Example& ex);  // no tools

}  // namespace gspo::data
