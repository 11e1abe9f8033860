// Issue #65's math defects (docs/verifiers.md, "Math"), each kind with the adversarial wrong answers next to it, so
// that a fix cannot open a reward hack: a wrong time graded right, then right answers graded wrong.
#include <catch2/catch.hpp>

#include <set>
#include <vector>

#include "gspo/reward/math/math.h"
#include "gspo/reward/math/math_expr.h"

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

// Math-Verify reads a box holding "0,ddd" (0, one group of three digits) as a decimal comma and any other comma as a
// list: \boxed{3,5} is the list 3, 5, not 3.5. "0,125" was read as thousands, 125: a wrong answer graded right.
TEST_CASE("math: a decimal comma inside \\boxed{} reads as Math-Verify reads it", "[reward][math]") {
  check_cases({
      {"So $\\boxed{0,125}$.", "0.125", true},
      {"So $\\boxed{0,125}$.", "\\frac{1}{8}", true},
      {"So $\\boxed{0{,}125}$.", "0.125", true},
      {"So $\\boxed{0,111}$.", "0,111", true},
      {"So $\\boxed{0,125}$.", "125", false},
      {"So $\\boxed{0,111}$.", "111", false},
      {"So $\\boxed{0,125}$.", "0.25", false},
      {"So $\\boxed{0, 125}$.", "0.125", false},  // a space after the comma: a list
      {"So $\\boxed{0,5}$.", "0.5", false},       // not three digits: the list 0, 5
      {"So $\\boxed{3,5}$.", "3.5", false},
      {"So $\\boxed{3,5}$.", "3,5", true},
      {"So $\\boxed{3,5}$.", "5,3", true},
      {"So $\\boxed{3,5}$.", "(3,5)", true},
      {"So $\\boxed{3,5}$.", "35", false},
      {"So $\\boxed{1,500}$.", "1500", true},
      {"So $\\boxed{1,500}$.", "1.5", false},
      {"The answer is 0,125", "\\frac{1}{8}", true},  // prose: a decimal comma, as before
  });
}

// Several boxes joined by \quad, "and" or "or" (in one math span or bare) are one list of equations; "\quadx_2" (no
// space after \quad) loses the \quad too.
TEST_CASE("math: several boxed equations joined by \\quad, and, or", "[reward][math]") {
  check_cases({
      {"$$\\boxed{k = 45} \\quad \\text{and} \\quad \\boxed{n = 2}$$", "k = 45, n = 2", true},
      {"$$\\boxed{k = 45} \\quad \\text{and} \\quad \\boxed{n = 3}$$", "k = 45, n = 2", false},
      {"\\boxed{k = 45} \\quad \\text{and} \\quad \\boxed{n = 2}", "k = 45, n = 2", true},
      {"\\boxed{k = 45} \\quad \\text{and} \\quad \\boxed{n = 3}", "k = 45, n = 2", false},
      {"$$\\boxed{k = 45}$$", "k = 45, n = 2", false},
      {"$\\boxed{x = 1}$ or $\\boxed{x = -2}$", "x = 1, x = -2", true},
      {"$\\boxed{x = 1}$ or $\\boxed{x = 2}$", "x = 1, x = -2", false},
      {"$$\\boxed{a_{37} = 19, \\quad a_3 = 2}$$", "a_3 = 2, a_{37} = 19", true},
      {"$$\\boxed{a_{37} = 19, \\quad a_3 = 3}$$", "a_3 = 2, a_{37} = 19", false},
      {"$$\\boxed{(2, 2)} \\quad \\text{and} \\quad \\boxed{(6, 2)}$$", "(2, 2), (6, 2)", true},
      {"$$\\boxed{(2, 2)} \\quad \\text{and} \\quad \\boxed{(2, 6)}$$", "(2, 2), (6, 2)", false},
      {"$$\\boxed{(x, y) = (5, 8) \\quad \\text{and} \\quad (8, 5)}$$", "(5, 8), (8, 5)", true},
      {"$$\\boxed{x = \\frac{1}{2}, x = \\frac{-1 \\pm \\sqrt{13}}{4}}$$",  // a \pm inside a \frac reads as math
       "$$x = \\frac{1}{2}, x = \\frac{-1 \\pm \\sqrt{13}}{4}$$", true},
      {"$$\\boxed{x = \\frac{1}{2}, x = \\frac{-1 \\pm \\sqrt{11}}{4}}$$",
       "$$x = \\frac{1}{2}, x = \\frac{-1 \\pm \\sqrt{13}}{4}$$", false},
      {"$\\boxed{10^{\\frac{\\sqrt{13} - 5}{6}}} \\quad \\text{and} \\quad \\boxed{10^{-\\frac{5 + \\sqrt{13}}{6}}}$",
       "$x_{1}=10^{\\frac{-5+\\sqrt{13}}{6}},\\quadx_{2}=10^{\\frac{-5-\\sqrt{13}}{6}}$", true},
      {"$\\boxed{10^{\\frac{\\sqrt{13} - 5}{6}}} \\quad \\text{and} \\quad \\boxed{10^{\\frac{5 + \\sqrt{13}}{6}}}$",
       "$x_{1}=10^{\\frac{-5+\\sqrt{13}}{6}},\\quadx_{2}=10^{\\frac{-5-\\sqrt{13}}{6}}$", false},
  });
}

// A reference whose backslash escapes a JSON or Python string took ("\f" is a form feed: \frac became form feed +
// "rac") is restored. Math-Verify reads such a \frac as the product r*a*c and grades a correct \frac answer wrong;
// we grade it right (docs/verifiers.md, kept differences).
TEST_CASE("math: a matrix whose \\frac came through a form-feed escape", "[reward][math]") {
  // "-\\" then a form feed then "rac": the JSON text "-\\\frac" read with "\f" as an escape
  const char* broken = "$\\begin{pmatrix}-\\\frac{7}{4}&-2\\\\4&\\frac{1}{4}\\\\\\end{pmatrix}$";
  check_cases({
      {broken, broken, true},
      {"$\\begin{pmatrix}-\\frac{7}{4}&-2\\\\4&\\frac{1}{4}\\end{pmatrix}$", broken, true},
      {"$\\begin{pmatrix}-\\frac{7}{5}&-2\\\\4&\\frac{1}{4}\\end{pmatrix}$", broken, false},
      {"$\\begin{pmatrix}-rac{7}{4}&-2\\\\4&\\frac{1}{4}\\end{pmatrix}$", broken, false},
      {"So $\\boxed{\\frac{1}{2}}$.", "\frac{1}{2}", true},  // form feed + "rac"
      {"So $\\boxed{\\frac{1}{3}}$.", "\frac{1}{2}", false},
      {"So $\\boxed{12}$.", "3\times 4", true},  // tab + "imes"
      {"So $\\boxed{13}$.", "3\times 4", false},
  });
  CHECK(reward::restore_control_escapes("\frac{1}{2}") == "\\frac{1}{2}");
  CHECK(reward::restore_control_escapes("\\\frac{1}{2}") == "\\frac{1}{2}");
  CHECK(reward::restore_control_escapes("\boxed{5}") == "\\boxed{5}");
  CHECK(reward::restore_control_escapes("a\tb\r\n") == "a\tb\r\n");  // a tab or return before no command stays
  CHECK(reward::restore_control_escapes("x\tand y\tangle") == "x\tand y\tangle");  // not a whole command name
}

// A set {a, b} against a tuple (a, b), as Math-Verify compares them: a set reference takes the tuple in any order, a
// tuple reference takes the set's elements in written order; a closed interval is neither.
TEST_CASE("math: a set in braces against a tuple", "[reward][math]") {
  check_cases({
      {"The solutions are $\\boxed{\\{1,2\\}}$.", "(1,2)", true},
      {"The solutions are $\\boxed{(2,1)}$.", "\\{1,2\\}", true},
      {"The solutions are $\\boxed{(1,2)}$.", "\\{1,2\\}", true},
      {"The solutions are $\\boxed{\\{1,2,3\\}}$.", "(1,2,3)", true},
      {"The solutions are $\\boxed{(3,1,2)}$.", "\\{1,2,3\\}", true},
      {"The solutions are $\\boxed{\\{2,1\\}}$.", "(1,2)", false},
      {"The solutions are $\\boxed{\\{3,2,1\\}}$.", "(1,2,3)", false},
      {"The solutions are $\\boxed{\\{1,3\\}}$.", "(1,2)", false},
      {"The solutions are $\\boxed{(1,3)}$.", "\\{1,2\\}", false},
      {"The solutions are $\\boxed{(1,2,2)}$.", "\\{1,2\\}", false},
      {"The solutions are $\\boxed{\\{1,2\\}}$.", "[1,2]", false},
      {"The solutions are $\\boxed{[1,2]}$.", "\\{1,2\\}", false},
      {"The solutions are $\\boxed{(1,2]}$.", "\\{1,2\\}", false},
  });
}

// A list of tuples is a set: any order, and a tuple written twice counts once (Math-Verify's FiniteSet).
TEST_CASE("math: an unordered list of tuples", "[reward][math]") {
  check_cases({
      {"$\\boxed{(3, 37, 3, 13), (3, 17, 3, 7), (3, 3, 2, 3), (3,17,3,7), (17,3,3,7), (37,3,3,13)}$",
       "(37,3,3,13),(17,3,3,7),(3,37,3,13),(3,17,3,7),(3,3,2,3)", true},
      {"$\\boxed{(3, 37, 3, 13), (3, 17, 3, 7), (3, 3, 2, 3), (3,17,3,7), (17,3,3,7), (37,3,3,13)}$",
       "(37,3,3),(17,3,3,7),(3,37,3,13),(3,17,3,7),(3,3,2,3)", false},
      {"The pairs are $\\boxed{(1,2),(3,4),(1,2)}$.", "(3,4),(1,2)", true},
      {"The pairs are $\\boxed{(1,2),(3,5),(1,2)}$.", "(3,4),(1,2)", false},
      {"The pairs are $\\boxed{(1,2),(1,2)}$.", "(3,4),(1,2)", false},
      {"The pairs are $\\boxed{(2,1),(4,3)}$.", "(1,2),(3,4)", false},
      {"The pairs are $\\boxed{\\{(3,4),(1,2)\\}}$.", "(1,2),(3,4)", true},
      {"solutions are:\n\n\\[\n\\boxed{(1, 2)}, \\boxed{(2, 1)}, \\boxed{(-1, -20)}, \\boxed{(-20, -1)}\n\\]",
       "(2,1),(1,2),(-1,-20),(-20,-1)", true},
      {"solutions are:\n\n\\[\n\\boxed{(1, 2)}, \\boxed{(2, 1)}, \\boxed{(-1, -20)}, \\boxed{(-20, 1)}\n\\]",
       "(2,1),(1,2),(-1,-20),(-20,-1)", false},
      {"$\\boxed{(7,11),\\ (11,7)}$", "$(11,7)or(7,11)$", true},  // "or" with no spaces joins the list
      {"$\\boxed{(7,11),\\ (11,8)}$", "$(11,7)or(7,11)$", false},
      {"$\\boxed{(7,11)}$", "$(11,7)or(7,11)$", false},
  });
}

// A labelled ratio reference: the label's subscript is a name, not a word (S_{MBCN} made the reference no answer).
TEST_CASE("math: a labelled ratio", "[reward][math]") {
  check_cases({
      {"$\\boxed{7:32}$", "S_{MBCN}:S=7:32", true},
      {"$\\boxed{7:32}$", "$S_{MBCN}:S=7:32$", true},
      {"$\\boxed{14:64}$", "S_{MBCN}:S=7:32", true},  // the same ratio (Math-Verify's reading)
      {"$\\boxed{7:23}$", "S_{MBCN}:S=7:32", false},
      {"$\\boxed{32:7}$", "$S_{MBCN}:S=7:32$", false},
      {"$\\boxed{7:32}$", "S_1:S=7:32", true},
      {"$\\boxed{S_{MBCN}:S=7:32}$", "7:32", true},
      {"$\\boxed{S_{MBCN}:S=7:23}$", "7:32", false},
      {"$11:21$", "V_{1}:V_{2}=11:21", true},
      {"$21:11$", "V_{1}:V_{2}=11:21", false},
  });
}

// Products compared up to the order of their factors inside a sum: a digit after a letter or bracket is a factor
// ("z y 3" = 3yz), and \sum_{k=lo}^{hi} body is evaluated (integer bounds) or compared by bounds and body.
TEST_CASE("math: commuted factors inside a sum", "[reward][math]") {
  check_cases({
      {"So $\\boxed{2x + z y 3}$.", "2x+3y\\cdot z", true},
      {"So $\\boxed{2x + z y 4}$.", "2x+3y\\cdot z", false},
      {"So $\\boxed{2x + z x 3}$.", "2x+3y\\cdot z", false},
      {"So $\\boxed{x2}$.", "2x", true},
      {"So $\\boxed{x2}$.", "x^2", false},
      {"So $\\boxed{(x+1)2}$.", "2(x+1)", true},
      {"So $\\boxed{(x+1)2}$.", "2(x+2)", false},
      {"$F_n = \\sum_{k=0}^{n-1} F_{n-k-1} F_k$", "F_n = \\sum_{k=0}^{n-1} F_k F_{n-k-1}", true},
      {"$F_n = \\sum_{k=0}^{n-2} F_k F_{n-k-2}$", "F_n = \\sum_{k=0}^{n-1} F_k F_{n-k-1}", false},
      {"$F_n = \\sum_{k=1}^{n-1} F_{n-k-1} F_k$", "F_n = \\sum_{k=0}^{n-1} F_k F_{n-k-1}", false},
      {"$F_n = \\sum_{k=0}^{n-1} F_{n-k} F_k$", "F_n = \\sum_{k=0}^{n-1} F_k F_{n-k-1}", false},
      {"So $\\boxed{\\sum_{k=1}^{n} k^2 x}$.", "\\sum_{k=1}^{n} x k^2", true},
      {"So $\\boxed{\\sum_{k=1}^{n} k^3 x}$.", "\\sum_{k=1}^{n} x k^2", false},
      {"So $\\boxed{\\sum_{k=1}^{3} k^2}$.", "14", true},
      {"So $\\boxed{\\sum_{k=1}^{3} k^2}$.", "13", false},
      {"So $\\boxed{\\sum_{k=1}^{4} k^2}$.", "\\sum_{k=1}^{3} k^2", false},
  });
  CHECK(*reward::evaluate_math("\\sum_{k=1}^{4} k") == Approx(10));
  CHECK_FALSE(reward::evaluate_math("\\sum_{k=1}^{n} k").has_value());  // n is free
  CHECK(*reward::math_variables("\\sum_{k=0}^{n-1} F_k F_{n-k-1}") == std::set<std::string>{"F_{k}", "F_{n-k-1}", "n"});
  // a sum inside a sum's body is no number: the work stays bounded
  CHECK_FALSE(reward::evaluate_math("\\sum_{k=1}^{2}\\sum_{j=1}^{2} j").has_value());
}
