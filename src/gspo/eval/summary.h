// Benchmark statistics over K graded samples per problem: avg@K, unbiased pass@k, maj@K.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gspo::eval {

// Unbiased pass@k estimate for one problem with n samples of which c are correct (Chen et al. 2021):
// 1 - C(n - c, k) / C(n, k), computed as a product to stay exact for large n. Requires 1 <= k <= n.
double pass_at_k(int64_t n, int64_t c, int64_t k);

struct ProblemResult {
  std::vector<char> correct;         // per sample
  std::vector<double> rewards;       // per sample
  std::vector<std::string> votes;    // per sample: normalised final answer ("" = none), math only
  std::vector<int64_t> tokens;       // per sample response tokens (0 when unknown)
  bool majority_correct = false;     // filled by the caller that knows how to compare answers
  std::vector<std::string> details;  // per sample: the verifier's note (extracted answer, code failure reason)
};

// The most common non-empty vote ("" when none); ties go to the vote seen first.
std::string majority_vote(const std::vector<std::string>& votes);

// Summary JSON for one dataset: problems, samples_per_problem, avg@K, pass@k for k = 1, 2, 4, ... and K,
// maj@K (when votes were given), mean reward, response token statistics.
nlohmann::ordered_json summarize(const std::string& name, const std::vector<ProblemResult>& problems, bool with_majority);

// A fixed-width table of summaries for the console.
std::string format_table(const std::vector<nlohmann::ordered_json>& summaries);

}  // namespace gspo::eval
