// Issue #65's math defects (docs/verifiers.md, "Math"), each kind with the adversarial wrong answers next to it, so
// that a fix cannot open a reward hack: a wrong time graded right, then right answers graded wrong.
#include <catch2/catch.hpp>

#include <set>
#include <vector>

#include "gspo/reward/math.h"
#include "gspo/reward/math_expr.h"

using namespace gspo;

namespace {
struct Case {
  const char* response;
  const char* reference;
  bool equal;
};

// Grades every case (reward.math_gold: auto, as training does) and requires each verdict.
void check_cases(const std::vector<Case>& cases) {
  reward::MathVerifier v;
  for (const auto& c : cases) {
    INFO("response: " << c.response << "\nreference: " << c.reference);
    CHECK(v.score(c.response, data::Example{"t", "", c.reference, "", "", ""}).correct == c.equal);
  }
}
}  // namespace

// 12:00 and 1:00 both read 12/0 and 1/0: two infinities, equal. A value that divides by zero or overflows is no
// number now; the same time is still equal as text. Math-Verify: the same verdicts.
TEST_CASE("math: a wrong time is wrong (x:00 is no infinity)", "[reward][math]") {
  check_cases({
      {"The clock shows $\\boxed{1:00}$.", "12:00", false},
      {"The clock shows $\\boxed{12:00}$.", "1:00", false},
      {"The clock shows $\\boxed{2:00}$.", "12:00", false},
      {"The clock shows $\\boxed{14:00}$.", "2:00", false},
      {"The clock shows $\\boxed{0:00}$.", "12:00", false},
      {"The clock shows $\\boxed{12:00}$.", "\\infty", false},
      {"So $\\boxed{\\infty}$.", "12:00", false},
      {"The clock shows $\\boxed{12:00}$.", "12:00", true},
      {"The meeting starts at $1:00$.", "1:00", true},
      {"\\boxed{\\frac{1}{0}}", "\\frac{2}{0}", false},
      {"\\boxed{5/0}", "1/0", false},
      {"\\boxed{2^{1025}}", "2^{1024}", false},  // both overflow a double
      {"\\boxed{10^{400}}", "10^{401}", false},
      {"\\boxed{10^{400}}", "10^{400}", true},
      {"\\boxed{\\ln 0}", "\\ln 0 + 1", false},
      {"\\boxed{7:32}", "7:23", false},
      {"\\boxed{10:18}", "5:9", true},  // a ratio is still its quotient (Math-Verify's reading)
      {"\\boxed{-\\infty}", "-\\infty", true},
      {"\\boxed{\\infty}", "-\\infty", false},
  });
  CHECK_FALSE(reward::evaluate_math("12:00").has_value());
  CHECK_FALSE(reward::evaluate_math("2^{1100}").has_value());
  CHECK(reward::math_variables("\\frac{1}{x-1}").has_value());  // 1/0 while collecting names is no failure
  CHECK(*reward::evaluate_math("2\\infty") == INFINITY);
}
