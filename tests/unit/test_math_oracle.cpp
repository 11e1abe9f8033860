// MathVerifier against an independent grader: tests/golden/math_oracle_cases.py labels 576 hand-written
// (response, reference) pairs with math-verify's verdict (math-verify 0.9.0, the only oracle: Qwen2.5-Math's grader
// is not packaged). We require >= 98% agreement on all of them, >= 97% on issue #58's kinds and >= 95% on issue
// #65's, and print every case where the two differ (docs/verifiers.md argues each one kept). References are read
// as reward.math_gold: auto does.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>

#include "gspo/reward/math/math.h"
#include "helpers.h"

using namespace gspo;
using nlohmann::json;

TEST_CASE("math verifier agrees with math-verify on >= 98% of the oracle cases", "[reward][math][golden]") {
  std::ifstream in(test::model_path("math_oracle_cases.json"));
  REQUIRE(in);
  const json cases = json::parse(in)["cases"];
  REQUIRE(cases.size() >= 150);
  reward::MathVerifier v;
  size_t agree = 0;
  std::map<std::string, std::set<bool>> labels;  // category -> the oracle's verdicts seen
  // Issue #58's kinds, each with cases math-verify grades right and near misses it grades wrong.
  const std::set<std::string> issue58 = {"identity", "decimal_comma", "labelled",  "tuple_set", "inequality",
                                         "equations", "chain",        "subscript", "prose_mid", "gold_solution"};
  size_t agree58 = 0, cases58 = 0;
  // Issue #65's kinds: a wrong time, a decimal comma in a box, a set against a tuple, a list of tuples, a labelled
  // ratio, boxed equations joined by \quad/and/or, a \frac through a form-feed escape, commuted factors and sums.
  const std::set<std::string> issue65 = {"time",        "decimal_box",     "set_tuple", "tuple_list",
                                         "ratio_label", "boxed_equations", "escape",    "commuted"};
  size_t agree65 = 0, cases65 = 0;
  for (const auto& c : cases) {
    const std::string response = c["response"], reference = c["reference"], category = c["category"];
    const bool oracle = c["math_verify"];
    labels[category].insert(oracle);
    data::Example ex{"oracle", "", reference, "", "", ""};
    const bool ours = v.score(response, ex).correct;
    cases58 += issue58.count(category);
    cases65 += issue65.count(category);
    if (ours == oracle) {
      ++agree;
      agree58 += issue58.count(category);
      agree65 += issue65.count(category);
      continue;
    }
    auto got = reward::extract_answer(response, {});
    WARN("[" << category << "] math-verify says " << (oracle ? "equal" : "not equal") << ", gspo the opposite\n"
             << "  response:  " << response << "\n  reference: " << reference << "\n  extracted: "
             << (got ? reward::normalize_answer(*got) : "<none>"));
  }
  const double rate = static_cast<double>(agree) / static_cast<double>(cases.size());
  WARN("agreement with math-verify: " << agree << "/" << cases.size() << " = " << rate);
  CHECK(rate >= 0.98);
  const double rate58 = cases58 ? static_cast<double>(agree58) / static_cast<double>(cases58) : 0.0;
  WARN("issue #58's kinds: " << agree58 << "/" << cases58 << " = " << rate58);
  CHECK(cases58 >= 150);
  CHECK(rate58 >= 0.97);
  const double rate65 = cases65 ? static_cast<double>(agree65) / static_cast<double>(cases65) : 0.0;
  WARN("issue #65's kinds: " << agree65 << "/" << cases65 << " = " << rate65);
  CHECK(cases65 >= 60);
  CHECK(rate65 >= 0.95);  // the differences kept are argued in docs/verifiers.md (a \frac through a form feed)
  // The categories of issue #12 are all present, each with equal and not-equal cases.
  for (const char* cat : {"number", "answer_is", "minerva", "frac", "sqrt", "binom", "degrees", "thousands",
                          "percent", "choice", "assign", "interval", "set", "symbolic"}) {
    INFO("category " << cat);
    CHECK(labels[cat].size() == 2);
  }
  for (const auto& cat : issue58) {
    INFO("category " << cat);
    CHECK(labels[cat].size() == 2);
  }
  for (const auto& cat : issue65) {
    INFO("category " << cat);
    CHECK(labels[cat].size() == 2);
  }
}
