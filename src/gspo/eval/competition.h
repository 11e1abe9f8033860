// What an eval reports for competition problems (reward/code/competition.h rows; docs/evaluation.md "CodeForces"): each
// sample's verdict and attempt index, each problem's first accepted attempt (samples are attempts in sampling
// order), and in the summary the difficulty rating (eval/rating.h) with how many problems were solved at which
// attempt and the checker failures.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gspo/data/example.h"
#include "gspo/eval/summary.h"

namespace gspo::eval {

// True when every row holds competition tests ("tests": {"type": "competition", ...}).
bool is_competition_set(const std::vector<data::Example>& rows);

// A contest id or problem index as text: "2024" whether the file holds 2024 or "2024".
std::string id_text(const nlohmann::json& v);

// Checks an eval set's competition rows before any sampling: each row's tests and limits as grading reads them
// (reward::check_competition_rows), and no contest problem (contest_id and index) twice, which would count its
// attempts twice in pass@k and the ratings and let one row's result stand for both in CodeElo's. Throws DataError
// naming both rows.
void check_competition_set(const std::vector<data::Example>& rows);

// The index of the first correct sample (the first accepted attempt); nullopt when none is.
std::optional<int64_t> first_accepted(const std::vector<char>& correct);

// Adds to a samples.jsonl line of sample `s` of problem `p`: "attempt" (s), "verdict" ("accepted", the failure, or
// null for a checker failure, which is no verdict on the solution) and the problem's "first_accepted" (or null).
void add_attempt_fields(nlohmann::ordered_json& line, const ProblemResult& p, size_t s);

// Adds to a set's summary: "difficulty_rating" {rating, stderr, kind, problems, unrated_problems, what} over the
// problems whose difficulty is a number (absent when none is), "solved_at_attempt" {attempt: problems} and
// "checker_failures" (samples).
void add_competition_summary(nlohmann::ordered_json& summary, const std::vector<ProblemStats>& problems);

// The table's lines for those fields ("" when the summary has none).
std::string competition_table_lines(const nlohmann::ordered_json& summary);

}  // namespace gspo::eval
