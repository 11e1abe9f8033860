// `gspo eval`, `gspo score` and `gspo tokenize`: flags -> the library, results printed as a table or JSON lines.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gspo::cli {

struct EvalArgs {
  std::string config;                 // "" = defaults
  std::vector<std::string> overrides;
  std::string model;
  std::string adapter;                // "" = model.adapter
  std::vector<std::string> datasets;
  int64_t samples = 0;                // 0 = eval.samples
  int64_t max_problems = -1;          // -1 = eval.max_problems
  std::string since, until;           // "" = eval.since / eval.until
  std::string out = "runs/eval";
  bool no_progress = false;
  bool overwrite = false;             // start over in `out` (a finished or unfinished eval there)
  std::string standings;              // CodeElo standings pack (eval/standings.h); "" = none
};
int eval(const EvalArgs& a);

struct ScoreArgs {
  std::string config;
  std::vector<std::string> overrides;
  std::string dataset;
  std::string responses;
  std::string reward;                 // overrides reward.kind
  std::string out;                    // "" = print only
  bool json = false;
  std::string standings;              // CodeElo standings pack (eval/standings.h); "" = none
};
int score(const ScoreArgs& a);

struct TokenizeArgs {
  std::string tokenizer;    // tokenizer.json, a directory holding one, a gspo spec, or a model .pt
  bool decode = false;      // read {"ids": [...]} instead of {"text": ...}
  bool with_special = false;  // --decode: keep special tokens in the text
  bool tokens = false;      // also print each token's text
};
int tokenize(const TokenizeArgs& a);

// `gspo prompts`: what the policy reads. The config's dataset rows rendered as training renders them (data.prompt_template,
// the chat template, its system prompt and tools) and tokenized by the model's tokenizer, with each prompt's length
// against the model's budget (max_seq_len - rollout.max_new_tokens).
struct PromptsArgs {
  std::string config;                 // "" = defaults
  std::vector<std::string> overrides;  // --set
  int64_t rows = 3;                   // how many rows
  int64_t from = 0;                   // the first row (0-based, in file order)
  bool json = false;                  // one JSON object a row
  bool tokens = false;                // also each token's text
};
int prompts(const PromptsArgs& a);

}  // namespace gspo::cli
