// Validation during training (eval.every > 0): the eval pipeline of `gspo eval` run on eval.datasets every N
// rollout steps inside `gspo train`, sharded over the ranks. The Trainer writes the summaries to
// RUN/validation.jsonl and the headline figures ("val/<set>/avg@K", pass@k, cons@K) into that step's
// metrics.jsonl line. With eval.standings, each competition set's summary carries CodeElo's rating ("codeelo", as
// `gspo eval --standings` writes it) and the metrics line "val/<set>/codeelo_rating".
#pragma once
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "gspo/eval/evaluator.h"
#include "gspo/eval/standings.h"
#include "gspo/eval/summary.h"

namespace gspo::parallel { class Comm; }

namespace gspo::eval {

class Validation {
 public:
  // Loads the sets and the standings pack (a DataError names a bad file at start-up, not at the first validation; a
  // ConfigError when the eval's max_new_tokens leaves no room for a prompt in `max_seq_len`, or when eval.standings
  // is set and no set is a competition set, or a competition set's rows rate in none of the pack's contests). Rank 0
  // logs the warnings.
  // `scorer`: training's verifier. Where config.reward scores with models (reward::scores_with_models) every set
  // grades with it, so the run holds one reward model or judge, on the training device; rule verifiers are made per
  // set (reward.kind auto picks by a set's rows). It must outlive this.
  Validation(const config::Config& cfg, model::Policy& policy, const tokenizer::Tokenizer& tok, int64_t max_seq_len,
             parallel::Comm& comm, const reward::Verifier& scorer);
  ~Validation();

  // After step `step` (every eval.every steps, and after the last step of the run).
  bool due(int64_t step, int64_t max_steps) const;
  // One summary per set (identical on every rank; as JSON, validation.jsonl's "datasets"). `samples`, when given,
  // gets this rank's samples as gspo eval's samples.jsonl lines (JSONL text, set by set).
  std::vector<SetSummary> run(std::string* samples = nullptr);

  // {"val/<set>/avg@K": ..., "val/<set>/pass@1": ..., ..., "val/<set>/codeelo_rating": ...} for the metrics line.
  static nlohmann::ordered_json headline(const std::vector<SetSummary>& summaries);
  // "aime24 avg@4 0.125 pass@4 0.300 cons@4 0.100 | lcb ..." for the console.
  static std::string one_line(const std::vector<SetSummary>& summaries);

 private:
  const config::Config& cfg_;
  parallel::Comm& comm_;
  std::vector<EvalSet> sets_;
  std::vector<std::unique_ptr<Grader>> graders_;
  Standings standings_;  // eval.standings
  Evaluator evaluator_;
};

}  // namespace gspo::eval
