// Competition sets (reward/competition.h rows; docs/evaluation.md "CodeForces"): which sets are, the checks before
// any sampling, and each sample's verdict and attempt index with its problem's first accepted attempt (samples are
// attempts in sampling order). The summary's competition section (difficulty rating, solved at which attempt,
// checker failures) is summary.h's CompetitionSummary; CodeElo's rating is standings.h's.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gspo/data/example.h"
#include "gspo/eval/summary.h"

namespace gspo::eval {

// True when every row holds competition tests ("tests": {"type": "competition", ...}); decided once per set
// (EvalSet::competition).
bool is_competition_set(const std::vector<data::Example>& rows);

// A contest id or problem index as text: "2024" whether the file holds 2024 or "2024".
std::string id_text(const nlohmann::json& v);

// Checks an eval set's competition rows before any sampling: each row's tests and limits as grading reads them
// (reward::check_competition_rows), and no contest problem (contest_id and index) twice, which would count its
// attempts twice in pass@k and the ratings and let one row's result stand for both in CodeElo's. Throws DataError
// naming both rows.
void check_competition_set(const std::vector<data::Example>& rows);

// Adds to a samples.jsonl line of sample `s` of problem `p`: "attempt" (s), "verdict" ("accepted", the failure, or
// null for a checker failure, which is no verdict on the solution) and the problem's "first_accepted" (or null).
void add_attempt_fields(nlohmann::ordered_json& line, const ProblemResult& p, size_t s);

}  // namespace gspo::eval
