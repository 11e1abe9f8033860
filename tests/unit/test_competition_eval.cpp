// What `gspo eval` reports for competition sets (eval/competition.h, eval/standings.h): attempts in sampling order,
// the first accepted one, verdicts, the difficulty rating in the summary (and across ranks' packing), and CodeElo's
// rating from a standings pack checked against eval/rating.h's functions, which test_rating.cpp checks against the
// issue's vectors and the Python reference.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <unistd.h>
#include <iostream>

#include <nlohmann/json.hpp>

#include "gspo/config/load.h"
#include "gspo/eval/eval.h"

#include "gspo/core/error.h"
#include "gspo/eval/competition.h"
#include "gspo/eval/rating.h"
#include "gspo/eval/sharded.h"
#include "gspo/eval/standings.h"
#include "gspo/eval/summary.h"
#include "configured_paths.h"
#include "helpers.h"

using namespace gspo;
using nlohmann::json;

namespace {

// K = 8 samples with `accepted` correct, the first at `first` (the rest wrong answers).
eval::ProblemResult problem(const std::string& difficulty, int accepted, int first = 0) {
  eval::ProblemResult p;
  p.difficulty = difficulty;
  for (int s = 0; s < 8; ++s) {
    const bool ok = s >= first && s < first + accepted;
    p.correct.push_back(ok);
    p.rewards.push_back(ok ? 1 : 0);
    p.failures.push_back(ok ? "" : "wrong answer");
    p.details.push_back("");
    p.tokens.push_back(10);
  }
  return p;
}

data::Example cf_row(const std::string& contest, const std::string& index) {
  data::Example ex;
  ex.row = json{{"problem", "p"}, {"contest_id", contest}, {"index", index}, {"time_limit_s", 1},
                {"memory_limit_mb", 256}, {"tests", {{"type", "competition"}, {"cases", json::array()}}}}.dump();
  return ex;
}

// Named by the process too: ctest runs each test case as its own process, several at once, and a counter alone
// would give two of them the same file.
std::string write_pack(const json& pack) {
  static int n = 0;
  const std::string path = std::string(GSPO_TEST_MODELS) + "/standings_pack_" + std::to_string(getpid()) + "_" +
                           std::to_string(n++) + ".json";
  std::ofstream(path) << pack.dump();
  return path;
}

}  // namespace

TEST_CASE("competition summary: the difficulty rating of the issue's vector, attempts, checker failures", "[competition][eval]") {
  std::vector<eval::ProblemResult> ps = {problem("800", 8), problem("1200", 6, 2), problem("1600", 2, 5),
                                         problem("2000", 0)};
  ps[3].failures[7] = "checker failure";
  const auto summary = eval::summarize("cf", ps, false, true);
  const nlohmann::ordered_json s = summary;
  REQUIRE(s.contains("difficulty_rating"));
  CHECK(s["difficulty_rating"]["rating"].get<double>() == Approx(1400).margin(1e-6));
  CHECK(s["difficulty_rating"]["kind"] == "estimate");
  CHECK(s["difficulty_rating"]["stderr"].get<double>() ==
        Approx(eval::difficulty_rating({{800, 8, 8}, {1200, 8, 6}, {1600, 8, 2}, {2000, 8, 0}}).stderr_));
  CHECK(s["solved_at_attempt"].dump() == R"({"0":1,"2":1,"5":1})");
  CHECK(s["checker_failures"] == 1);
  CHECK(s["pass@1"].get<double>() == Approx((8 + 6 + 2 + 0) / 32.0));
  CHECK(s["pass@8"].get<double>() == Approx(0.75));
  CHECK(s["by_difficulty"].begin().key() == "800");  // numeric levels by value
  const auto table = eval::format_table({summary});
  CHECK_THAT(table, Catch::Contains("difficulty rating 1400 +- "));
  CHECK_THAT(table, Catch::Contains("solved at attempt: #1 1, #3 1, #6 1"));
  CHECK_THAT(table, Catch::Contains("checker failures (not verdicts): 1 samples"));
  // All solved: a flagged bound; not a competition set: no rating at all.
  const nlohmann::ordered_json all =
      eval::summarize("cf", std::vector<eval::ProblemResult>{problem("800", 8), problem("1500", 8)}, false, true);
  CHECK(all["difficulty_rating"]["kind"] == "all solved (lower bound)");
  CHECK(all["difficulty_rating"]["rating"] == 1500.0);
  CHECK(all["difficulty_rating"]["stderr"].is_null());
  CHECK_FALSE(nlohmann::ordered_json(eval::summarize("x", ps, false, false)).contains("difficulty_rating"));
}

TEST_CASE("competition samples: attempt, verdict and first accepted attempt", "[competition][eval]") {
  auto p = problem("800", 2, 3);
  p.failures[0] = "checker failure";
  p.failures[1] = "time limit";
  nlohmann::ordered_json line;
  eval::add_attempt_fields(line, p, 0);
  CHECK(line["verdict"].is_null());
  CHECK(line["first_accepted"] == 3);
  eval::add_attempt_fields(line, p, 1);
  CHECK(line["verdict"] == "time limit");
  eval::add_attempt_fields(line, p, 3);
  CHECK(line["verdict"] == "accepted");
  CHECK(line["attempt"] == 3);
  CHECK(eval::first_accepted({0, 0, 0}) == std::nullopt);
  // The first accepted attempt and the new verdicts survive the ranks' packing.
  auto st = eval::stats_of(p);
  st.failures["memory limit"] = 1;
  const auto back = eval::unpack_stats(eval::pack_stats(st, {"800"}).data(), {"800"});
  CHECK(back.first_accepted == 3);
  CHECK(back.failures.at("checker failure") == 1);
  CHECK(back.failures.at("time limit") == 1);
  CHECK(back.failures.at("memory limit") == 1);
  CHECK(eval::is_competition_set({cf_row("1", "A")}));
  data::Example plain;
  plain.row = R"({"tests": {"type": "stdio", "cases": []}})";
  CHECK_FALSE(eval::is_competition_set({cf_row("1", "A"), plain}));
}

TEST_CASE("CodeElo from a standings pack: score, rank and rating per contest, mean, percentile", "[competition][eval]") {
  // Contest 7 (points): 300 rated rows; contest 8 (ICPC): 250 rows; contest 9: too few rows; contest 10: not evaluated.
  json rows7 = json::array(), rows8 = json::array(), rows9 = json::array();
  for (int i = 0; i < 300; ++i) rows7.push_back({2000 - 5 * i, 0, 1000 + 3 * i});
  for (int i = 0; i < 250; ++i) rows8.push_back({3 - i / 100, 10 * (i % 100), 1400 + i});
  for (int i = 0; i < 50; ++i) rows9.push_back({1, 0, 1500});
  const json pack{{"contests", {{{"id", 7}, {"problems", {{{"index", "A"}, {"points", 500}}, {{"index", "B"}, {"points", 1000}}}}, {"rows", rows7}},
                                {{"id", "8"}, {"problems", {{{"index", "A"}}, {{"index", "B"}}, {{"index", "C"}}}}, {"rows", rows8}},
                                {{"id", "9"}, {"problems", {{{"index", "A"}}}}, {"rows", rows9}},
                                {{"id", "10"}, {"problems", {{{"index", "A"}}}}, {"rows", rows9}}}},
                  {"human_ratings", {100, 900, 1200, 1500, 1800, 2400}}};
  const auto loaded = eval::load_standings(write_pack(pack));
  std::vector<data::Example> rows = {cf_row("7", "A"), cf_row("7", "B"), cf_row("8", "A"), cf_row("8", "C"),
                                     cf_row("9", "A")};
  std::vector<const data::Example*> ptrs;
  for (const auto& r : rows) ptrs.push_back(&r);
  const std::vector<eval::ProblemResult> results = {problem("", 1, 2), problem("", 0), problem("", 1, 0),
                                                    problem("", 3, 4), problem("", 8)};
  const auto codeelo = eval::codeelo_summary(loaded, ptrs, results);
  const nlohmann::ordered_json c = codeelo;
  REQUIRE(c["contests"].size() == 2);
  const auto& c7 = c["contests"][0];
  CHECK(c7["points"] == 400.0);  // 500 - 50 * 2
  std::vector<eval::StandingRow> r7;
  for (const auto& r : rows7) r7.push_back({r[0], r[1], r[2]});
  CHECK(c7["rank"] == eval::contest_rank(r7, {400, 0}));
  CHECK(c7["rank"] == 300);  // every row has more than 400 points (the last 505)
  CHECK(c7["rating"] == eval::codeelo_rating(r7, 300));
  const auto& c8 = c["contests"][1];
  CHECK(c8["points"] == 2.0);
  CHECK(c8["penalty"] == 40.0);  // 10 * 0 + 10 * 4
  std::vector<eval::StandingRow> r8;
  for (const auto& r : rows8) r8.push_back({r[0], r[1], r[2]});
  const int64_t rank8 = eval::contest_rank(r8, {2, 40});
  CHECK(rank8 == 105);  // 100 rows with 3 points, then 2 points with penalty 0..40
  CHECK(c8["rating"] == eval::codeelo_rating(r8, rank8));
  const double mean = (c7["rating"].get<double>() + c8["rating"].get<double>()) / 2;
  CHECK(c["rating"].get<double>() == mean);
  CHECK(c["percentile"].get<double>() == eval::rating_percentile({100, 900, 1200, 1500, 1800, 2400}, mean));
  CHECK(c["contests_with_too_few_rated_rows"].dump() == R"(["9"])");
  CHECK(c["contests_without_evaluated_problems"].dump() == R"(["10"])");
  eval::SetSummary rated;  // {"dataset": "cf", "problems": 5, "samples_per_problem": 8, "codeelo": c}
  rated.dataset = "cf", rated.problems = 5, rated.samples_per_problem = 8, rated.codeelo = codeelo;
  CHECK_THAT(eval::format_table({rated}), Catch::Contains("CodeElo rating"));
  // Validation gathers only each problem's first accepted attempt across the ranks: the same block from those.
  const std::vector<std::optional<int64_t>> first = {2, std::nullopt, 0, 4, 0};
  CHECK(nlohmann::ordered_json(eval::codeelo_summary(loaded, ptrs, first)) == c);
  auto later = first;
  later[0] = 3;  // the first accepted attempt one later: 50 points fewer in contest 7
  CHECK(nlohmann::ordered_json(eval::codeelo_summary(loaded, ptrs, later))["contests"][0]["points"] == 350.0);
}

TEST_CASE("a standings pack applies to the competition sets: none, or one it cannot rate, is refused before sampling",
          "[competition][eval]") {
  json rows = json::array();
  for (int i = 0; i < 300; ++i) rows.push_back({2000 - 5 * i, 0, 1000 + 3 * i});
  const auto pack = eval::load_standings(
      write_pack(json{{"contests", {{{"id", 7}, {"problems", {{{"index", "A"}, {"points", 500}}}}, {"rows", rows}}}}}));
  eval::EvalSet cf{"cf", "cf.jsonl", {cf_row("7", "A")}};
  eval::EvalSet other_contest{"cf_other", "cf_other.jsonl", {cf_row("8", "A")}};
  data::Example math;
  math.row = R"({"problem": "1+1", "answer": "2"})";
  eval::EvalSet maths{"math", "math.jsonl", {math}};
  CHECK_NOTHROW(eval::check_standings(pack, {maths, cf}));  // the math set simply gets no rating
  CHECK_THROWS_WITH(eval::check_standings(pack, {maths}), Catch::Contains("none of the sets is made of competition"));
  CHECK_THROWS_WITH(eval::check_standings(pack, {cf, other_contest}),
                    Catch::Contains("does not rate the set 'cf_other'") && Catch::Contains("no contest"));
}

TEST_CASE("standings packs: bad packs are refused naming the file and the key", "[competition][eval]") {
  CHECK_THROWS_AS(eval::load_standings("/nonexistent/pack.json"), IoError);
  CHECK_THROWS_WITH(eval::load_standings(write_pack(json{{"contests", json::array()}})), Catch::Contains("'contests'"));
  const json bad_row{{"contests", {{{"id", 1}, {"problems", {{{"index", "A"}}}}, {"rows", {{1, 2}}}}}}};
  CHECK_THROWS_WITH(eval::load_standings(write_pack(bad_row)),
                    Catch::Contains("contest 1") && Catch::Contains("[points, penalty, old_rating]"));
  const json unsorted{{"contests", {{{"id", 1}, {"problems", {{{"index", "A"}}}}, {"rows", json::array()}}}},
                      {"human_ratings", {3, 1}}};
  CHECK_THROWS_WITH(eval::load_standings(write_pack(unsorted)), Catch::Contains("sorted"));
  const json ok{{"contests", {{{"id", 1}, {"problems", {{{"index", "A"}}}}, {"rows", json::array()}}}}};
  const auto pack = eval::load_standings(write_pack(ok));
  data::Example other = cf_row("2", "A");
  CHECK_THROWS_WITH(eval::codeelo_summary(pack, {&other}, {problem("", 1)}), Catch::Contains("no contest"));
  eval::SetSummary summary;
  data::Example math;  // a set that is not made of competition rows
  math.row = R"({"problem": "1+1", "answer": "2"})";
  const eval::EvalSet math500{"math500", "math500.jsonl", {math}};
  CHECK_THROWS_AS(eval::add_codeelo(summary, pack, math500, {&other}, {eval::stats_of(problem("", 1))}), ConfigError);
}

namespace {

std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("gspo score on the competition fixtures: verdicts in order, first accepted, ratings", "[competition][eval]") {
  // tests/data/competition: A sum (wrong, then right), B odd pair with a checker (C++ "1 2", Python "n n-1": both
  // right), C sort (a time limit, then a compile error).
  const std::string dir = std::string(GSPO_SOURCE_DIR) + "/tests/data/competition";
  const std::string out = std::string(GSPO_TEST_MODELS) + "/competition_score";
  json rows = json::array();
  for (int i = 0; i < 300; ++i) rows.push_back({2500 - 5 * i, 0, 1200 + 2 * i});
  const std::string pack = write_pack(
      {{"contests", {{{"id", "9001"}, {"problems", {{{"index", "A"}, {"points", 500}}, {{"index", "B"}, {"points", 1000}},
                                                    {{"index", "C"}, {"points", 1500}}}}, {"rows", rows}}}}});
  auto cfg = config::load_text("reward: {kind: auto}\n", "t.yaml");
  const nlohmann::ordered_json s =
      eval::run_score(cfg, {dir + "/problems.jsonl", dir + "/responses.jsonl", out, pack});
  const auto lines = read_lines(out + "/scored.jsonl");
  REQUIRE(lines.size() == 6);
  const std::vector<std::string> verdicts = {"wrong answer", "accepted", "accepted", "accepted", "time limit",
                                             "compile error"};
  const std::vector<json> first = {1, 1, 0, 0, nullptr, nullptr};
  for (size_t i = 0; i < 6; ++i) {
    INFO(lines[i].dump());
    CHECK(lines[i]["verdict"] == verdicts[i]);
    CHECK(lines[i]["attempt"] == i % 2);
    CHECK(lines[i]["first_accepted"] == first[i]);
  }
  CHECK(s["pass@1"].get<double>() == Approx(0.5));
  CHECK(s["pass@2"].get<double>() == Approx(2.0 / 3));
  const auto want = eval::difficulty_rating({{800, 2, 1}, {1200, 2, 2}, {1600, 2, 0}});
  CHECK(s["difficulty_rating"]["rating"].get<double>() == Approx(want.rating).margin(1e-9));
  CHECK(s["solved_at_attempt"].dump() == R"({"0":1,"1":1})");
  const auto& c = s["codeelo"]["contests"][0];
  CHECK(c["points"] == 450.0 + 1000.0);
  std::vector<eval::StandingRow> r;
  for (const auto& x : rows) r.push_back({x[0], x[1], x[2]});
  CHECK(c["rating"] == eval::codeelo_rating(r, eval::contest_rank(r, {1450, 0})));
}

TEST_CASE("106 real Codeforces problems convert and grade end to end", "[competition][eval]") {
  const std::string src = std::string(GSPO_SOURCE_DIR) + "/../shared/data/benchmarks/xcodeeval_samples_106.jsonl";
  if (!std::ifstream(src).good()) {
    std::cout << "SKIPPED (no ../shared): " << src << " is absent" << std::endl;
    return;
  }
  const std::string rows_path = std::string(GSPO_TEST_MODELS) + "/cf106.jsonl";
  const std::string cmd = std::string(GSPO_PYTHON) + " " + GSPO_SOURCE_DIR +
                          "/scripts/convert_codeforces.py --format xcodeeval " + src + " -o " + rows_path + " > /dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  // Attempt 0 prints nothing useful; attempt 1 answers each sample test from a table (accepted on sample tests: what
  // "generated tests can accept wrong solutions" means at its extreme).
  const auto problems = read_lines(rows_path);
  REQUIRE(problems.size() == 106);
  const std::string responses_path = std::string(GSPO_TEST_MODELS) + "/cf106_responses.jsonl";
  {
    std::ofstream f(responses_path);
    for (size_t i = 0; i < problems.size(); ++i) {
      json table = json::object();
      for (const auto& c : problems[i]["tests"]["cases"]) table[c["input"].get<std::string>()] = c["output"];
      const std::string program = "import sys, json\nprint(json.loads(" + json(table.dump()).dump() +
                                  ")[sys.stdin.read()])\n";
      f << json{{"index", i}, {"responses", {"```python\nprint(-1)\n```", "```python\n" + program + "```"}}}.dump()
        << "\n";
    }
  }
  auto cfg = config::load_text("reward: {kind: auto}\n", "t.yaml");
  const nlohmann::ordered_json s = eval::run_score(cfg, {rows_path, responses_path, "", ""});
  CHECK(s["problems"] == 106);
  CHECK(s["pass@1"].get<double>() == Approx(0.5));
  CHECK(s["pass@2"].get<double>() == Approx(1.0));
  CHECK(s["solved_at_attempt"].dump() == R"({"1":106})");
  std::vector<eval::RatedProblem> rated;
  for (const auto& p : problems)
    if (p.contains("difficulty")) rated.push_back({p["difficulty"].get<double>(), 2, 1});
  CHECK(s["difficulty_rating"]["problems"] == rated.size());
  CHECK(s["difficulty_rating"]["unrated_problems"] == 106 - rated.size());
  CHECK(s["difficulty_rating"]["rating"].get<double>() == Approx(eval::difficulty_rating(rated).rating).margin(1e-9));
  CHECK(s["failures"].dump() == R"({"wrong answer":106})");
}

TEST_CASE("standings packs: repeated contests or problems, impossible numbers and unsorted rows are refused",
          "[competition][eval]") {
  // Before #65 each of these was read and gave a wrong rating silently.
  json rows = json::array();
  for (int i = 0; i < 300; ++i) rows.push_back({2000 - 5 * i, 10 * i, 1000 + 3 * i});
  const json problems = {{{"index", "A"}, {"points", 500}}, {{"index", "B"}, {"points", 1000}}};
  auto contest = [&](const json& id, const json& ps, const json& rs) {
    return json{{"id", id}, {"problems", ps}, {"rows", rs}};
  };
  auto refused = [&](const json& contests, const std::vector<std::string>& words) {
    const std::string path = write_pack(json{{"contests", contests}});
    INFO(contests.dump().substr(0, 300));
    CHECK_THROWS_AS(eval::load_standings(path), DataError);
    try {
      eval::load_standings(path);
    } catch (const DataError& e) {
      CHECK_THAT(e.what(), Catch::Contains(path));
      for (const auto& w : words) CHECK_THAT(e.what(), Catch::Contains(w));
    }
  };
  CHECK_NOTHROW(eval::load_standings(write_pack(json{{"contests", json::array({contest(7, problems, rows)})}})));
  refused(json::array({contest(7, problems, rows), contest("8", problems, rows), contest("7", problems, rows)}),
          {"contest 7 is listed twice", "contests 1 and 3"});
  refused(json::array({contest(7, {{{"index", "A"}}, {{"index", "A"}}}, rows)}),
          {"contest 7: problem A is listed twice"});
  refused(json::array({contest(7, {{{"index", "A"}, {"points", -500}}}, rows)}),
          {"contest 7: problem A", "'points'", "-500"});
  refused(json::array({contest(7, {{{"index", "A"}, {"points", 0}}}, rows)}), {"problem A", "positive"});
  json r = rows;
  r[4] = {1980, 40, 0};
  refused(json::array({contest(7, problems, r)}), {"contest 7: row 5", "old_rating", "oldRating"});
  r = rows;
  r[9] = {-3, 90, 1027};
  refused(json::array({contest(7, problems, r)}), {"contest 7: row 10", "negative"});
  r = rows;
  r[0] = {2000, -10, 1000};
  refused(json::array({contest(7, problems, r)}), {"contest 7: row 1", "negative"});
  r = rows;
  std::swap(r[41], r[42]);  // points out of order: row 43 has more than row 42
  refused(json::array({contest(7, problems, r)}), {"contest 7: row 43", "ranks above row 42", "standings order"});
  r = json::array({{1000, 50, 1500}, {1000, 20, 1500}});  // equal points, penalty out of order
  refused(json::array({contest(7, problems, r)}), {"contest 7: row 2", "standings order"});
  r = json::array({{1000, 20, 1500}, {1000, 20, 1500}, {1000, 50, 1500}, {900, 0, 1500}});  // ties and order hold
  CHECK_NOTHROW(eval::load_standings(write_pack(json{{"contests", json::array({contest(7, problems, r)})}})));
}

TEST_CASE("competition sets: a contest problem twice is refused naming both rows, before any grading",
          "[competition][eval]") {
  auto row = [](const json& contest, const json& index, int line) {
    data::Example ex;
    ex.id = "cf.jsonl:" + std::to_string(line);
    ex.row = json{{"problem", "p"}, {"contest_id", contest}, {"index", index}, {"time_limit_s", 1},
                  {"memory_limit_mb", 256},
                  {"tests", {{"type", "competition"}, {"cases", {{{"input", "1"}, {"output", "1"}}}}}}}.dump();
    return ex;
  };
  CHECK_NOTHROW(eval::check_competition_set({row(7, "A", 1), row(7, "B", 2), row(8, "A", 3)}));
  CHECK_THROWS_AS(eval::check_competition_set({row(7, "A", 1), row(7, "B", 2), row("7", "A", 3)}), DataError);
  CHECK_THROWS_WITH(eval::check_competition_set({row(7, "A", 1), row(7, "B", 2), row("7", "A", 3)}),
                    Catch::Contains("cf.jsonl:3") && Catch::Contains("contest 7 problem A") &&
                        Catch::Contains("cf.jsonl:1"));
  // gspo score reads the set first: the repeated problem is refused before any response is read or graded.
  const std::string dir = std::string(GSPO_TEST_MODELS) + "/competition_twice";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/problems.jsonl") << row(7, "A", 1).row << "\n" << row(7, "A", 2).row << "\n";
  auto cfg = config::load_text("reward: {kind: auto}\n", "t.yaml");
  CHECK_THROWS_WITH(eval::run_score(cfg, {dir + "/problems.jsonl", dir + "/no_responses.jsonl", dir + "/out", ""}),
                    Catch::Contains("problems.jsonl:2") && Catch::Contains("problems.jsonl:1"));
}
