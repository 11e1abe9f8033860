// An interrupted `gspo eval` read back from its output directory: the samples already written, kept for the
// problems whose K samples are all there (a prefix of each set: problems are evaluated in order), so the eval
// continues after them instead of starting over.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gspo/eval/grade.h"
#include "gspo/eval/summary.h"

namespace gspo::eval {

struct DoneSamples {
  // set name -> problem index -> its K sample lines (sample order), for the complete prefix of each set.
  std::map<std::string, std::vector<std::vector<nlohmann::ordered_json>>> sets;
  int64_t dropped_lines = 0;  // lines after a set's complete prefix, or cut off by the interruption
};

// Reads `samples_path` (missing = nothing done). K = samples per problem.
DoneSamples read_done_samples(const std::string& samples_path, int64_t K);

// The graded result of one problem from its sample lines (votes recomputed from the responses for cons@K).
ProblemResult result_from_lines(const std::vector<nlohmann::ordered_json>& lines, const Grader& grader,
                                const data::Example& problem);

// Compares the identity of an earlier eval with this one's: "" when equal, else the first key that differs, with
// both values, for the message that refuses to resume.
std::string first_difference(const nlohmann::json& before, const nlohmann::json& now, const std::string& prefix = "");

}  // namespace gspo::eval
