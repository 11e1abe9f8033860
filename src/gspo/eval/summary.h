// Benchmark statistics over K graded samples per problem: avg@K, unbiased pass@k, cons@K (majority vote), failure
// reasons, and the same by difficulty; the table a person reads at the end of an eval.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
  std::vector<reward::ToolUse> tool_use;  // per sample with tools (episodes); empty without
};

// The most common non-empty vote ("" when none); ties go to the vote seen first.
std::string majority_vote(const std::vector<std::string>& votes);

// One problem reduced to what the statistics need: fixed-size, so ranks can exchange them (eval/sharded.h).
struct ProblemStats {
  int64_t n = 0, c = 0;         // samples, correct samples
  bool majority_correct = false;
  double reward_sum = 0;
  int64_t tokens_sum = 0, tokens_max = 0;
  std::string difficulty;
  std::map<std::string, int64_t> failures;  // reason -> samples
  int64_t tool_samples = 0, tool_calls = 0;  // with tools: samples, their calls,
  int64_t tool_calling = 0, tool_failed = 0;  // the samples that called a tool, that had a call fail
  int64_t first_accepted = -1;  // the first correct sample's index (competition: the first accepted attempt); -1 = none
};
ProblemStats stats_of(const ProblemResult& r);

// Summary JSON for one dataset: problems, samples_per_problem, avg@K, pass@k for k = 1, 2, 4, ... and K, cons@K
// (majority vote, when `with_majority`), mean reward, response token statistics, failures (reason -> samples),
// when problems carry a difficulty, by_difficulty {level: {problems, avg@K, pass@k..., cons@K}} and, with tools,
// tools {calls_mean, calling_frac, failed_frac} over the samples; `competition` (competition rows: eval/competition.h)
// adds the difficulty rating, solved_at_attempt and checker_failures.
nlohmann::ordered_json summarize(const std::string& name, const std::vector<ProblemStats>& problems, bool with_majority,
                                 bool competition = false);
nlohmann::ordered_json summarize(const std::string& name, const std::vector<ProblemResult>& problems, bool with_majority,
                                 bool competition = false);

// "avg@8 0.312  pass@1 0.312  pass@8 0.750  cons@8 0.500": the accuracy fields (keys with '@') of a summary.
std::string accuracy_cells(const nlohmann::ordered_json& summary);

// The end-of-eval report: per dataset, a block with the metrics, a row per difficulty, the failure counts, the
// skipped prompts and (gspo score) a note on dataset rows that had no responses.
std::string format_table(const std::vector<nlohmann::ordered_json>& summaries);

}  // namespace gspo::eval
