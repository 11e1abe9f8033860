// MathVerifier against Math-Verify 0.9.0 on the kinds of answers issue #34 found it missing: relations, equations,
// matrices, LaTeX forms and units, answers in prose, references that are whole solutions, conventions, and near
// misses. tests/golden/math_grading_cases.py generates the cases (not from either grader's rules or tests) and labels
// them with math-verify; we require >= 97% agreement, print every difference, and docs/verifiers.md argues each
// difference we keep.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>

#include "gspo/reward/math/math.h"
#include "helpers.h"

using namespace gspo;
using nlohmann::json;

TEST_CASE("math verifier agrees with math-verify on >= 97% of the generated grading cases", "[reward][math][golden]") {
  std::ifstream in(test::model_path("math_grading_cases.json"));
  REQUIRE(in);
  const json cases = json::parse(in)["cases"];
  REQUIRE(cases.size() >= 500);
  size_t agree = 0;
  std::map<std::string, std::set<bool>> labels;          // category -> the oracle's verdicts seen
  std::map<std::string, std::pair<int, int>> by_category;  // category -> (agreed, cases)
  for (const auto& c : cases) {
    const std::string response = c["response"], reference = c["reference"], category = c["category"];
    const bool oracle = c["math_verify"];
    labels[category].insert(oracle);
    reward::MathOptions o;
    o.gold = c["gold"] == "extract" ? reward::GoldMode::kExtract : reward::GoldMode::kAnswer;
    const reward::MathVerifier v(o);
    const bool ours = v.score(response, data::Example{"grading", "", reference, "", "", ""}).correct;
    ++by_category[category].second;
    if (ours == oracle) {
      ++agree;
      ++by_category[category].first;
      continue;
    }
    const auto got = reward::extract_answer(response, o);
    const auto gold = reward::reference_answer(reference, o.gold);
    WARN("[" << category << "] math-verify says " << (oracle ? "equal" : "not equal") << ", gspo the opposite\n"
             << "  response:  " << response << "\n  reference: " << reference << "\n  extracted: "
             << (got ? reward::normalize_answer(*got) : "<none>")
             << "\n  gold:      " << (gold ? reward::normalize_answer(*gold) : "<none>"));
  }
  for (const auto& [category, n] : by_category) WARN(category << ": " << n.first << "/" << n.second);
  const double rate = static_cast<double>(agree) / static_cast<double>(cases.size());
  WARN("agreement with math-verify: " << agree << "/" << cases.size() << " = " << rate);
  CHECK(rate >= 0.97);
  for (const char* cat : {"relation", "equation", "matrix", "latex_forms", "prose", "gold_extract", "conventions",
                          "regression"}) {
    INFO("category " << cat);
    CHECK(labels[cat].size() == 2);  // each kind has equal and not-equal cases
  }
}
