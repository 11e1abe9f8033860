// Competition ratings of a model's attempts at Codeforces-style problems (docs/evaluation.md, "CodeForces"):
//   a rating against the problems' difficulty ratings alone (the Elo rating r at which the expected number of
//     accepted attempts equals the observed one), with its standard error; this is not CodeElo's number;
//   CodeElo's rating (QwenLM/CodeElo, its calc_rating script; arXiv 2501.01257), exactly: per contest the model's
//     score from its first accepted attempts, its rank among the contest's rated participants, the rating that rank
//     implies against their pre-contest ratings; averaged over contests, and a percentile among human ratings.
// Pure arithmetic on plain values.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gspo::eval {

// One rated problem: its difficulty rating d, attempts n, accepted attempts c (0 <= c <= n, n >= 1).
struct RatedProblem {
  double difficulty = 0;
  int64_t attempts = 0;
  int64_t accepted = 0;
};

struct DifficultyRating {
  // kEstimate: `rating` solves sum_j (c_j - n_j p_j(r)) = 0, p_j(r) = 1 / (1 + 10^((d_j - r) / 400)).
  // kAllSolved / kNoneSolved: no finite solution exists; `rating` is then a bound, not an estimate: at least the
  // hardest problem's difficulty (all solved), at most the easiest one's (none solved); `stderr_` is 0.
  enum class Kind { kEstimate, kAllSolved, kNoneSolved } kind = Kind::kEstimate;
  double rating = 0;
  double stderr_ = 0;      // (400 / ln 10) / sqrt(sum_j n_j p_j (1 - p_j)) at the estimate (Fisher information)
  int64_t problems = 0;    // rated problems used
};

// Bisection to 1e-9 rating points. Throws DataError when `problems` is empty or a problem has n < 1 or c outside
// [0, n].
DifficultyRating difficulty_rating(const std::vector<RatedProblem>& problems);

// "estimate", "all solved (lower bound)", "none solved (upper bound)".
const char* rating_kind_name(DifficultyRating::Kind k);

// CodeElo's standings of one contest, rated participants only, in standings order.
struct StandingRow {
  double points = 0;
  double penalty = 0;
  double old_rating = 0;  // the participant's rating before the contest
};

struct ContestProblem {
  std::string index;             // "A", "B1", ...
  std::optional<double> points;  // point-scored rounds; nullopt = ICPC-style (1 point, penalty minutes)
};

// The model's result in one contest: for each problem the first accepted attempt i (0-based) scores
// max(0, points - 50 i), or 1 point and 10 i penalty minutes without points; a problem without an accepted attempt
// scores nothing. `first_accepted[k]` belongs to `problems[k]` (nullopt = never accepted).
struct ContestScore {
  double points = 0;
  double penalty = 0;
};
ContestScore contest_score(const std::vector<ContestProblem>& problems,
                           const std::vector<std::optional<int64_t>>& first_accepted);

// CodeElo's rank: the index of the first row strictly worse than `score` (fewer points, or equal points and more
// penalty), rows.size() when none is; on sorted standings, the number of rows not strictly worse.
int64_t contest_rank(const std::vector<StandingRow>& rows, const ContestScore& score);

// CodeElo's rating for `rank`: bisection on [0, max(0, max old rating) + 100) for the largest integer r with
// 1 + sum_i 1 / (1 + 10^((r - r_i) / 400)) >= rank (0 when none is).
int64_t codeelo_rating(const std::vector<StandingRow>& rows, int64_t rank);

// CodeElo's percentile: the share (in %, rounded to one decimal) of `sorted_ratings` below `rating`
// (bisect_left), as Python's round (half to even). Throws DataError when the table is empty.
double rating_percentile(const std::vector<double>& sorted_ratings, double rating);

}  // namespace gspo::eval
