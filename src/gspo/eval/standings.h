// CodeElo's rating from a standings pack (`gspo eval --standings`, `gspo score --standings`, eval.standings in
// validation; docs/evaluation.md "CodeForces"). The pack is a JSON file the user assembles from Codeforces'
// contest.standings and contest.ratingChanges (nothing is fetched at run time):
//   {"contests": [{"id": "2024",
//                  "problems": [{"index": "A", "points": 500}, {"index": "B"}],     (no points: ICPC-style)
//                  "rows": [[points, penalty, old_rating], ...]}],                   (rated rows, standings order)
//    "human_ratings": [...]}                            (optional: sorted ratings for the percentile)
// A dataset row takes part through its "contest_id" and "index"; its attempts are its samples in order.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gspo/data/example.h"
#include "gspo/eval/rating.h"
#include "gspo/eval/summary.h"

namespace gspo::eval {

struct EvalSet;

struct Contest {
  std::string id;
  std::vector<ContestProblem> problems;
  std::vector<StandingRow> rows;
};

struct StandingsPack {
  std::string path;
  std::vector<Contest> contests;
  std::vector<double> human_ratings;  // sorted; empty = no percentile
};

// Reads a pack; throws DataError naming the file and the key (and the contest, problem or row) that is wrong, IoError
// when it cannot be read. Refused: a contest or a contest's problem listed twice, points that are not positive, a
// row's negative points or penalty, an old rating that is not positive, rows not in standings order (points
// descending, then penalty ascending): each would give a wrong rating silently.
StandingsPack load_standings(const std::string& path);

// CodeElo's contests with 200 or fewer rated rows give no rating (its calc_rating returns none for them).
inline constexpr size_t kCodeEloMinRows = 201;

// The "codeelo" summary section of `rows` (graded as `results`, same order): per contest of the pack with at least
// one evaluated problem, {id, problems, evaluated, points, penalty, rank, rated_rows, rating} (a contest problem that
// was not evaluated counts as unsolved), the mean rating over the rated contests, the percentile when the pack has
// human ratings, and the contests left out (no evaluated problem; too few rated rows). Throws DataError when no
// contest of the pack can be rated from these rows.
CodeEloSummary codeelo_summary(const StandingsPack& pack, const std::vector<const data::Example*>& rows,
                               const std::vector<ProblemResult>& results);
// The same from each row's first accepted attempt (nullopt: none), as validation gathers them across the ranks.
CodeEloSummary codeelo_summary(const StandingsPack& pack, const std::vector<const data::Example*>& rows,
                               const std::vector<std::optional<int64_t>>& accepted_at);

// Pointers to `rows`, in order (codeelo_summary's argument).
std::vector<const data::Example*> example_pointers(const std::vector<data::Example>& rows);

// The pack applies to the competition sets among `sets` (the others get no rating): a ConfigError when there is none,
// or when a competition set rates in none of the pack's contests (tried with nothing solved, so a pack that does not
// match the sets fails before any sampling).
void check_standings(const StandingsPack& pack, const std::vector<EvalSet>& sets);

// Sets summary.codeelo from `rows` of `set` graded as `problems` (same order); a ConfigError when the set is not a
// competition set (--standings applies to competition rows only).
void add_codeelo(SetSummary& summary, const StandingsPack& pack, const EvalSet& set,
                 const std::vector<const data::Example*>& rows, const std::vector<ProblemStats>& problems);

// eval.standings / --standings as gspo eval, gspo score and validation take it: the pack read when constructed (a bad
// file fails there, before any model is loaded or any row graded), checked against the sets once they are loaded,
// and rated on each competition set's results by summarize_set (eval/set_summary.h).
class Standings {
 public:
  Standings() = default;                        // none
  explicit Standings(const std::string& path);  // "" = none; load_standings's errors
  // check_standings against `sets`; nothing without a pack.
  void check(const std::vector<EvalSet>& sets) const;
  const StandingsPack* pack() const { return pack_ ? &*pack_ : nullptr; }

 private:
  std::optional<StandingsPack> pack_;
};

}  // namespace gspo::eval
