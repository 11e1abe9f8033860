// Prompt lengths checked once, at load: every row's prompt is templated and tokenized, and a row whose prompt plus
// rollout.max_new_tokens does not fit the model's max_seq_len is dropped with a count (data.overlong_prompts: skip,
// like the peers' max_prompt_length filters) or refused naming its file:line (error). Without this a long prompt
// stops training or an eval mid-run, and resuming stops at the same prompt again.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/data/example.h"
#include "gspo/tokenizer/chat_template.h"

namespace gspo::tokenizer { class Tokenizer; }

namespace gspo::data {

// The longest prompt a model of `max_seq_len` positions leaves beside `max_new_tokens` of response, the value of
// config key `key` (`for_eval`: as the eval's max_new_tokens, from eval.* or rollout.*). When that leaves no room for
// even a 1-token prompt, a ConfigError naming where the key was set, the key, its value, the model file `model` and
// its max_seq_len: "rollout.max_new_tokens (300) must be smaller than the max_seq_len of the model 'm.pt' (256)...".
int64_t prompt_budget(const config::Config& cfg, const std::string& key, int64_t max_new_tokens, int64_t max_seq_len,
                      const std::string& model, bool for_eval = false);

struct PromptFit {
  std::vector<Example> kept;   // the rows that fit, in their original order
  int64_t dropped = 0;         // rows over the limit
  std::string first_dropped;   // file:line of the first one ("" when none)
  int64_t first_dropped_tokens = 0;
  int64_t longest_kept = 0;    // tokens of the longest kept prompt
};

// `max_prompt_tokens` = max_seq_len - max_new_tokens (prompt_budget). With `refuse`, the first overlong row is a
// DataError naming it, its length and the limit; otherwise it is dropped. A DataError also when no row fits.
// `tools`: the tools the prompts list (format_prompt).
PromptFit fit_prompts(std::vector<Example> rows, const config::DataOptions& opts, const tokenizer::Tokenizer& tok,
                      int64_t max_prompt_tokens, bool refuse, const std::vector<tokenizer::ChatTool>& tools = {});

// One line for the log: "skipped 3 of 500 prompts longer than 1024 tokens (first: f.jsonl:17, 2210 tokens)".
std::string describe_dropped(const PromptFit& fit, int64_t total, int64_t max_prompt_tokens);

}  // namespace gspo::data
