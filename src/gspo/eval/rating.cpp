#include "gspo/eval/rating.h"

#include <algorithm>
#include <cmath>

#include "gspo/core/error.h"

namespace gspo::eval {
namespace {

double win_probability(double rating, double difficulty) {
  return 1.0 / (1.0 + std::pow(10.0, (difficulty - rating) / 400.0));
}

// sum_j (c_j - n_j p_j(r)): strictly decreasing in r.
double score_gap(const std::vector<RatedProblem>& problems, double r) {
  double gap = 0;
  for (const auto& p : problems)
    gap += static_cast<double>(p.accepted) - static_cast<double>(p.attempts) * win_probability(r, p.difficulty);
  return gap;
}

void check_problems(const std::vector<RatedProblem>& problems) {
  if (problems.empty()) throw DataError("difficulty rating: no rated problems (rows need a difficulty rating)");
  for (const auto& p : problems) {
    if (p.attempts < 1 || p.accepted < 0 || p.accepted > p.attempts || !std::isfinite(p.difficulty))
      throw DataError("difficulty rating: a problem of difficulty " + std::to_string(p.difficulty) + " has " +
                      std::to_string(p.accepted) + " accepted of " + std::to_string(p.attempts) +
                      " attempts (need 0 <= accepted <= attempts, attempts >= 1)");
  }
}

}  // namespace

const char* rating_kind_name(DifficultyRating::Kind k) {
  switch (k) {
    case DifficultyRating::Kind::kEstimate: return "estimate";
    case DifficultyRating::Kind::kAllSolved: return "all solved (lower bound)";
    case DifficultyRating::Kind::kNoneSolved: return "none solved (upper bound)";
  }
  return "?";
}

DifficultyRating difficulty_rating(const std::vector<RatedProblem>& problems) {
  check_problems(problems);
  DifficultyRating out;
  out.problems = static_cast<int64_t>(problems.size());
  int64_t accepted = 0, attempts = 0;
  double lo = problems[0].difficulty, hi = problems[0].difficulty;
  for (const auto& p : problems) {
    accepted += p.accepted;
    attempts += p.attempts;
    lo = std::min(lo, p.difficulty);
    hi = std::max(hi, p.difficulty);
  }
  if (accepted == attempts || accepted == 0) {
    out.kind = accepted == 0 ? DifficultyRating::Kind::kNoneSolved : DifficultyRating::Kind::kAllSolved;
    out.rating = accepted == 0 ? lo : hi;
    return out;
  }
  // A root exists: the gap is sum c > 0 far below every difficulty and sum c - sum n < 0 far above; widen until
  // the bracket holds it (each step doubles its width).
  double width = 400;
  lo -= width;
  hi += width;
  while (score_gap(problems, lo) <= 0 || score_gap(problems, hi) >= 0) {
    width *= 2;
    lo -= width;
    hi += width;
  }
  while (hi - lo > 1e-9) {
    const double mid = 0.5 * (lo + hi);
    if (mid == lo || mid == hi) break;
    (score_gap(problems, mid) > 0 ? lo : hi) = mid;
  }
  out.rating = 0.5 * (lo + hi);
  double information = 0;
  for (const auto& p : problems) {
    const double q = win_probability(out.rating, p.difficulty);
    information += static_cast<double>(p.attempts) * q * (1 - q);
  }
  out.stderr_ = (400.0 / std::log(10.0)) / std::sqrt(information);
  return out;
}

ContestScore contest_score(const std::vector<ContestProblem>& problems,
                           const std::vector<std::optional<int64_t>>& first_accepted) {
  if (first_accepted.size() != problems.size())
    throw DataError("contest score: " + std::to_string(first_accepted.size()) + " results for " +
                    std::to_string(problems.size()) + " problems");
  ContestScore s;
  for (size_t k = 0; k < problems.size(); ++k) {
    if (!first_accepted[k]) continue;
    const double i = static_cast<double>(*first_accepted[k]);
    if (problems[k].points) {
      s.points += std::max(0.0, *problems[k].points - 50.0 * i);
    } else {
      s.points += 1;
      s.penalty += 10.0 * i;
    }
  }
  return s;
}

int64_t contest_rank(const std::vector<StandingRow>& rows, const ContestScore& score) {
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].points < score.points || (rows[i].points == score.points && rows[i].penalty > score.penalty))
      return static_cast<int64_t>(i);
  return static_cast<int64_t>(rows.size());
}

int64_t codeelo_rating(const std::vector<StandingRow>& rows, int64_t rank) {
  double max_rating = 0;
  for (const auto& r : rows) max_rating = std::max(max_rating, r.old_rating);
  // CodeElo's calc_rating: l, r = 0, max_rating + 100; mid = int((l + r) / 2) (both >= 0: floor).
  int64_t lo = 0, hi = static_cast<int64_t>(std::floor(max_rating + 100));
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    double seed = 1;
    for (const auto& r : rows) seed += 1.0 / (1.0 + std::pow(10.0, (static_cast<double>(mid) - r.old_rating) / 400.0));
    (seed < static_cast<double>(rank) ? hi : lo) = mid;
  }
  return lo;
}

double rating_percentile(const std::vector<double>& sorted_ratings, double rating) {
  if (sorted_ratings.empty()) throw DataError("rating percentile: the table of human ratings is empty");
  const auto below = std::lower_bound(sorted_ratings.begin(), sorted_ratings.end(), rating) - sorted_ratings.begin();
  const double pct = static_cast<double>(below) / static_cast<double>(sorted_ratings.size()) * 100.0;
  return std::nearbyint(pct * 10.0) / 10.0;  // round half to even, as Python's round(x, 1) on these values
}

}  // namespace gspo::eval
