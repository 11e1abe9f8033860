// Competition ratings (eval/rating.h): the test vectors, then 520 random cases from the independent Python
// reference tests/golden/rating_reference.py (fixture make_rating_golden: mpmath root, CodeElo's rank and rating by
// other means). Tolerances: difficulty rating 1e-6 points and standard error 1e-9 relative (bisection to 1e-9
// against a 50-digit root); CodeElo's score, rank, rating and percentile exactly.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gspo/core/error.h"
#include "gspo/eval/rating.h"
#include "helpers.h"

using namespace gspo;
using nlohmann::json;

namespace {

std::vector<eval::StandingRow> flat_rows(int64_t n, double rating) {
  return std::vector<eval::StandingRow>(static_cast<size_t>(n), eval::StandingRow{0, 0, rating});
}

json golden() {
  std::ifstream in(test::model_path("rating_cases.json"));
  REQUIRE(in.good());
  return json::parse(in);
}

}  // namespace

TEST_CASE("difficulty rating: the issue's vector gives 1400 with its standard error", "[rating]") {
  std::vector<eval::RatedProblem> p = {{800, 8, 8}, {1200, 8, 6}, {1600, 8, 2}, {2000, 8, 0}};
  const auto r = eval::difficulty_rating(p);
  CHECK(r.kind == eval::DifficultyRating::Kind::kEstimate);
  CHECK(r.rating == Approx(1400).margin(1e-6));
  CHECK(r.problems == 4);
  // At 1400 the win probabilities are 1/(1+10^-1.5), 1/(1+10^-0.5) and their complements.
  const double a = 1 / (1 + std::pow(10.0, -1.5)), b = 1 / (1 + std::pow(10.0, -0.5));
  const double info = 2 * 8 * (a * (1 - a) + b * (1 - b));
  CHECK(r.stderr_ == Approx(400 / std::log(10.0) / std::sqrt(info)).epsilon(1e-12));
}

TEST_CASE("difficulty rating: all or none solved is a flagged bound, not an estimate", "[rating]") {
  const auto all = eval::difficulty_rating({{800, 8, 8}, {1900, 4, 4}});
  CHECK(all.kind == eval::DifficultyRating::Kind::kAllSolved);
  CHECK(all.rating == 1900);
  CHECK(all.stderr_ == 0);
  CHECK(std::string(eval::rating_kind_name(all.kind)) == "all solved (lower bound)");
  const auto none = eval::difficulty_rating({{800, 8, 0}, {1900, 4, 0}});
  CHECK(none.kind == eval::DifficultyRating::Kind::kNoneSolved);
  CHECK(none.rating == 800);
  CHECK_THROWS_AS(eval::difficulty_rating({}), DataError);
  CHECK_THROWS_WITH(eval::difficulty_rating({{800, 2, 3}}), Catch::Contains("3 accepted of 2 attempts"));
  CHECK_THROWS_AS(eval::difficulty_rating({{800, 0, 0}}), DataError);
}

TEST_CASE("CodeElo rating: the issue's vectors on 1000 rated rows at 1500", "[rating]") {
  const auto rows = flat_rows(1000, 1500);
  CHECK(eval::codeelo_rating(rows, 501) == 1500);
  CHECK(eval::codeelo_rating(rows, 901) == 1118);
  CHECK(eval::codeelo_rating(rows, 1000) == 300);
  CHECK(eval::codeelo_rating(rows, 101) == 1599);  // the cap: below max(old ratings) + 100
  CHECK(eval::codeelo_rating(rows, 0) == 1599);
}

TEST_CASE("CodeElo score and rank: first accepted attempt, points decay, ICPC penalty, ties", "[rating]") {
  const std::vector<eval::ContestProblem> pts = {{"A", 500.0}, {"B", 1000.0}, {"C", 80.0}};
  const auto s = eval::contest_score(pts, {0, 3, 2});
  CHECK(s.points == 500 + 850 + 0);  // max(0, 80 - 100)
  CHECK(s.penalty == 0);
  const std::vector<eval::ContestProblem> icpc = {{"A", std::nullopt}, {"B", std::nullopt}, {"C", std::nullopt}};
  const auto t = eval::contest_score(icpc, {1, std::nullopt, 7});
  CHECK(t.points == 2);
  CHECK(t.penalty == 80);
  CHECK_THROWS_AS(eval::contest_score(icpc, {1}), DataError);
  // Rows not strictly worse rank ahead: equal points with less or equal penalty.
  const std::vector<eval::StandingRow> rows = {{3, 10, 0}, {2, 50, 0}, {2, 80, 0}, {2, 81, 0}, {1, 0, 0}};
  CHECK(eval::contest_rank(rows, t) == 3);
  CHECK(eval::contest_rank(rows, {4, 0}) == 0);
  CHECK(eval::contest_rank(rows, {0, 0}) == 5);
}

TEST_CASE("CodeElo percentile: bisect_left over the sorted table, one decimal", "[rating]") {
  CHECK(eval::rating_percentile({100, 200, 200, 300}, 200) == 25.0);
  CHECK(eval::rating_percentile({100, 200, 200, 300}, 250) == 75.0);
  CHECK(eval::rating_percentile({100, 200, 300}, 250) == Approx(66.7).margin(1e-12));
  CHECK(eval::rating_percentile({100}, 50) == 0.0);
  CHECK_THROWS_AS(eval::rating_percentile({}, 1), DataError);
}

TEST_CASE("ratings agree with the independent Python reference", "[rating]") {
  const json g = golden();
  for (const auto& c : g["difficulty"]) {
    std::vector<eval::RatedProblem> p;
    for (const auto& x : c["problems"]) p.push_back({x["difficulty"], x["attempts"], x["accepted"]});
    INFO(c.dump());
    const auto r = eval::difficulty_rating(p);
    const std::string kind = c["kind"];
    if (kind == "estimate") {
      REQUIRE(r.kind == eval::DifficultyRating::Kind::kEstimate);
      CHECK(r.rating == Approx(c["rating"].get<double>()).margin(1e-6));
      CHECK(r.stderr_ == Approx(c["stderr"].get<double>()).epsilon(1e-9));
    } else {
      CHECK(r.kind == (kind == "all" ? eval::DifficultyRating::Kind::kAllSolved : eval::DifficultyRating::Kind::kNoneSolved));
    }
  }
  for (const auto& c : g["contests"]) {
    INFO(c["problems"].dump() + " " + c["first_accepted"].dump());
    std::vector<eval::ContestProblem> problems;
    for (const auto& p : c["problems"])
      problems.push_back({p["index"], p["points"].is_null() ? std::nullopt : std::optional<double>(p["points"])});
    std::vector<std::optional<int64_t>> first;
    for (const auto& f : c["first_accepted"]) first.push_back(f.is_null() ? std::nullopt : std::optional<int64_t>(f));
    std::vector<eval::StandingRow> rows;
    for (const auto& r : c["rows"]) rows.push_back({r[0], r[1], r[2]});
    const auto s = eval::contest_score(problems, first);
    CHECK(s.points == c["points"].get<double>());
    CHECK(s.penalty == c["penalty"].get<double>());
    const int64_t rank = eval::contest_rank(rows, s);
    CHECK(rank == c["rank"].get<int64_t>());
    CHECK(eval::codeelo_rating(rows, rank) == c["rating"].get<int64_t>());
  }
  for (const auto& c : g["percentiles"])
    CHECK(eval::rating_percentile(c["table"].get<std::vector<double>>(), c["rating"]) == c["percentile"].get<double>());
}
