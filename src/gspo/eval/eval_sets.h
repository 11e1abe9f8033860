// The problem sets of an eval, loaded once: rows read (LiveCodeBench rows as they are), the contest-date window
// applied (eval.since / eval.until), the first eval.max_problems kept, prompts that leave no room for the response
// dropped with a count (or refused: data.overlong_prompts error), the set's kind (competition or not) decided, and
// the sampling settings resolved.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/data/example.h"
#include "gspo/rollout/sampling.h"

namespace gspo::tokenizer { class Tokenizer; }

namespace gspo::eval {

struct EvalSet {
  EvalSet() = default;
  // A set of `rows` (in file order); `competition` decided from them here, once.
  EvalSet(std::string name, std::string path, std::vector<data::Example> rows);

  std::string name;                // file name without .jsonl
  std::string path;
  std::vector<data::Example> rows; // the problems evaluated, in file order
  bool competition = false;        // every row a competition problem (eval/competition.h): attempts and verdicts in
                                   // samples.jsonl, the summary's competition section, CodeElo's rating
  int64_t file_rows = 0;           // rows in the file
  int64_t selected_rows = 0;       // after the date window and eval.max_problems (skipped prompts included)
  int64_t outside_dates = 0;       // left out by eval.since / eval.until
  int64_t skipped_prompts = 0;     // left out: prompt too long for max_seq_len with max_new_tokens
};

// A set's name: the file name without its directory and .jsonl (names samples.jsonl lines and summaries).
std::string set_name(const std::string& path);

// The eval's sampling: eval.* where set, else rollout.* (rollout::sampling_params).
rollout::SamplingParams eval_sampling(const config::Config& cfg);

// The longest prompt an eval of the model `model` (context `max_seq_len`) can take beside the eval's max_new_tokens;
// a ConfigError naming eval.max_new_tokens (or rollout.max_new_tokens when that is unset), the model and its
// max_seq_len when no prompt fits (data::prompt_budget).
int64_t eval_prompt_budget(const config::Config& cfg, int64_t max_seq_len, const std::string& model);

// Loads `path` for an eval whose prompts may be `max_prompt_tokens` long (eval_prompt_budget). Throws DataError
// naming the file (empty set, a bad row, every row outside the date window) or the row (a competition row that
// check_competition_set refuses).
EvalSet load_eval_set(const config::Config& cfg, const std::string& path, const tokenizer::Tokenizer& tok,
                      int64_t max_prompt_tokens, bool loud);

}  // namespace gspo::eval
