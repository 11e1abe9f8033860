// Benchmark statistics over K graded samples per problem: avg@K, unbiased pass@k, cons@K (majority vote), failure
// reasons, and the same by difficulty. A set's summary is a typed value (SetSummary) with optional sections
// (competition, CodeElo, tools, what gspo eval and gspo score add), written as JSON by to_json alone and read by
// the table a person reads at the end of an eval, by validation's metrics and by `gspo score --json`.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gspo/eval/rating.h"
#include "gspo/reward/base/verifier.h"

namespace gspo::eval {

// Unbiased pass@k estimate for one problem with n samples of which c are correct (Chen et al. 2021):
// 1 - C(n - c, k) / C(n, k), computed as a product to stay exact for large n. Requires 1 <= k <= n.
double pass_at_k(int64_t n, int64_t c, int64_t k);

// The samples of one problem as graded.
struct ProblemResult {
  std::vector<char> correct;         // per sample
  std::vector<double> rewards;       // per sample
  std::vector<std::string> votes;    // per sample: normalised final answer ("" = none), math only
  std::vector<int64_t> tokens;       // per sample response tokens (0 when unknown)
  bool majority_correct = false;     // filled by the caller that knows how to compare answers
  std::vector<std::string> details;  // per sample: the verifier's note (extracted answer, code failure reason)
  std::vector<std::string> failures; // per sample: why it is wrong ("" = correct)
  std::string difficulty;            // the problem's difficulty ("" = none)
  std::string source;                // the problem's data source (data.source_key; "" = none)
  std::vector<reward::ToolUse> tool_use;  // per sample with tools (episodes); empty without
};

// The most common non-empty vote ("" when none); ties go to the vote seen first.
std::string majority_vote(const std::vector<std::string>& votes);

// The index of the first correct sample (a competition problem's first accepted attempt); nullopt when none is.
std::optional<int64_t> first_accepted(const std::vector<char>& correct);

// One problem reduced to what the statistics need: fixed-size, so ranks can exchange them (eval/sharded.h).
struct ProblemStats {
  int64_t n = 0, c = 0;         // samples, correct samples
  bool majority_correct = false;
  double reward_sum = 0;
  int64_t tokens_sum = 0, tokens_max = 0;
  std::string difficulty;
  std::string source;                       // data source ("" = none)
  std::map<std::string, int64_t> failures;  // reason -> samples
  int64_t tool_samples = 0, tool_calls = 0;  // with tools: samples, their calls,
  int64_t tool_calling = 0, tool_failed = 0;  // the samples that called a tool, that had a call fail
  int64_t first_accepted = -1;  // the first correct sample's index (competition: the first accepted attempt); -1 = none
};
ProblemStats stats_of(const ProblemResult& r);
std::vector<ProblemStats> stats_of(const std::vector<ProblemResult>& results);

// avg@K, pass@k for k = 1, 2, 4, ... and K, and cons@K over a set's (or a difficulty level's) problems.
struct Accuracy {
  int64_t samples = 0;                           // K; 0 = no figures (a set without problems or samples)
  double avg = 0;                                // avg@K
  std::vector<std::pair<int64_t, double>> pass;  // (k, pass@k), k ascending
  std::optional<double> cons;                    // cons@K (majority vote: math sets)
};
// ("avg@8", 0.3), ("pass@1", 0.3), ..., ("pass@8", 0.7), ("cons@8", 0.5): the figures named as the summary's keys,
// in its order; empty without figures.
std::vector<std::pair<std::string, double>> named_figures(const Accuracy& a);

struct LevelSummary {
  std::string level;  // the problems' difficulty
  int64_t problems = 0;
  Accuracy accuracy;
};

struct ToolsSummary {  // over the samples that ran with tools
  double calls_mean = 0;    // tool calls per sample
  double calling_frac = 0;  // samples that called a tool
  double failed_frac = 0;   // samples that had a call fail (an error or a timeout)
};

// A competition set's figures (eval/competition.h rows; docs/evaluation.md "CodeForces").
struct CompetitionSummary {
  std::optional<DifficultyRating> difficulty_rating;  // over the problems whose difficulty is a number; none = none is
  int64_t unrated_problems = 0;                       // the others
  std::map<int64_t, int64_t> solved_at_attempt;       // first accepted attempt -> problems
  int64_t checker_failures = 0;                       // samples whose checker failed (no verdict on the solution)
};

// CodeElo's rating of a competition set from a standings pack (eval/standings.h: codeelo_summary).
struct ContestResult {
  std::string id;
  int64_t problems = 0;   // the contest's
  int64_t evaluated = 0;  // of them in the set
  double points = 0, penalty = 0;
  int64_t rank = 0, rated_rows = 0, rating = 0;
};
struct CodeEloSummary {
  double rating = 0;                  // the mean over `contests`
  std::optional<double> percentile;   // among the pack's human ratings, when it has them
  std::vector<ContestResult> contests;
  std::vector<std::string> contests_without_evaluated_problems, contests_with_too_few_rated_rows;
  std::string standings;  // the pack's path
};

struct SourceSummary {  // gspo eval: the set's file
  std::string path;
  int64_t rows = 0;       // selected (date window, eval.max_problems), skipped prompts included
  int64_t file_rows = 0;  // in the file
  std::string fnv1a64;    // of its bytes
};

struct CoverageSummary {  // gspo score: the dataset's rows and those no response line names (not in the figures)
  int64_t dataset_rows = 0;
  int64_t problems_without_responses = 0;
};

// One set's summary. The figures after samples_per_problem are there when the set had problems and samples
// (accuracy.samples > 0); the optional sections when the set or the command has them.
struct SetSummary {
  std::string dataset;
  int64_t problems = 0;
  int64_t samples_per_problem = 0;  // K: the fewest samples of a problem
  Accuracy accuracy;
  double reward_mean = 0;
  double response_tokens_mean = 0;
  int64_t response_tokens_max = 0, response_tokens_total = 0;
  std::map<std::string, int64_t> failures;  // reason -> samples
  std::optional<ToolsSummary> tools;        // with tools
  int64_t references_without_answer = 0;    // problems whose reference held no answer (reward.math_gold); 0 = none
  std::vector<LevelSummary> by_difficulty;  // easy, medium, hard, then other levels by value; empty = no difficulty
  std::vector<LevelSummary> by_source;      // per data source (a mixed set), by name; empty = no problem names one
  std::optional<CompetitionSummary> competition;  // a competition set (EvalSet::competition)
  std::optional<CodeEloSummary> codeelo;          // a competition set rated from a standings pack
  std::optional<std::string> verifier;            // gspo eval, gspo score: the verifier's name
  std::optional<int64_t> skipped_prompts;         // gspo eval, validation: prompts too long, not in the figures
  std::optional<int64_t> outside_dates;           // gspo eval: rows left out by eval.since / eval.until
  std::optional<SourceSummary> source;            // gspo eval
  std::optional<CoverageSummary> coverage;        // gspo score
};

// The figures of one dataset: problems, samples_per_problem, avg@K, pass@k, cons@K (when `with_majority`), mean
// reward, response token statistics, failures, by_difficulty when problems carry a difficulty, tools with tools,
// and, when `competition` (a competition set's rows), the competition section. The other sections are the caller's.
SetSummary summarize(const std::string& name, const std::vector<ProblemStats>& problems, bool with_majority,
                     bool competition = false);
SetSummary summarize(const std::string& name, const std::vector<ProblemResult>& problems, bool with_majority,
                     bool competition = false);

// The summary as summary.json, validation.jsonl and `gspo score --json` hold it: the one place its JSON is written
// (keys in a fixed order; a section only when present). Also makes SetSummary convertible to ordered_json.
void to_json(nlohmann::ordered_json& j, const SetSummary& s);
void to_json(nlohmann::ordered_json& j, const CodeEloSummary& c);

// "avg@8 0.312  pass@1 0.312  pass@8 0.750  cons@8 0.500".
std::string accuracy_cells(const Accuracy& a);

// The end-of-eval report: per dataset, a block with the metrics, a row per difficulty, the competition figures, the
// failure counts, the skipped prompts and (gspo score) a note on dataset rows that had no responses.
std::string format_table(const std::vector<SetSummary>& summaries);

}  // namespace gspo::eval
