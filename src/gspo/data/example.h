// One prompt with its reference answer, as every task and dataset yields it.
#pragma once
#include <string>
#include <vector>

namespace gspo::data {

struct Example {
  std::string id;       // "file.jsonl:LINE" or "arithmetic:N"
  std::string prompt;   // the problem text, before the prompt template is applied
  std::string answer;   // reference answer (exact string, e.g. "017" stays "017")
  std::string row;      // the raw JSON row (empty for built-in tasks), for external verifiers
  std::string difficulty;  // the row's 'difficulty' (LiveCodeBench: easy, medium, hard); "" = none
  std::string date;        // the row's 'contest_date' as YYYY-MM-DD (LiveCodeBench); "" = none
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

}  // namespace gspo::data
