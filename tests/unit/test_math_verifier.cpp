// The math verifier's rules (docs/verifiers.md) as a table: extraction, normalisation, equivalence.
#include <catch2/catch.hpp>

#include <cmath>

#include "gspo/reward/math/math.h"
#include "gspo/reward/math/math_expr.h"
#include "gspo/reward/math/math_symbolic.h"

using namespace gspo;

namespace {
struct Case {
  const char* response;
  const char* reference;
  bool equal;
};

// Each row: a full response, the dataset's answer field, and whether they must be judged equal.
const Case kCases[] = {
    // extraction
    {"So the total is \\boxed{42}.", "42", true},
    {"First \\boxed{3}, then correcting: \\boxed{5}", "5", true},
    {"First \\boxed{3}, then correcting: \\boxed{5}", "3", false},
    {"\\boxed{\\frac{1}{\\sqrt{2}}}", "\\frac{\\sqrt{2}}{2}", true},
    {"The answer is 17.", "17", true},
    {"Thus the final answer is $\\frac{3}{4}$.", "0.75", true},
    {"We get 3 apples, then 4 more, total 7", "7", true},
    {"no numbers here", "7", false},
    {"\\fbox{12}", "12", true},
    // normalisation
    {"\\boxed{\\dfrac{3}{4}}", "\\frac34", true},
    {"\\boxed{\\tfrac{1}{2}}", "0.5", true},
    {"\\boxed{\\left( 1, 2 \\right)}", "(1,2)", true},
    {"\\boxed{10\\text{ cm}}", "10", true},
    {"\\boxed{45^\\circ}", "45", true},
    {"\\boxed{45^{\\circ}}", "45", true},
    {"\\boxed{\\$1,000}", "1000", true},
    {"\\boxed{1,234,567}", "1234567", true},
    {"\\boxed{007}", "7", true},
    {"\\boxed{5.}", "5", true},
    {"\\boxed{ 2 \\sqrt { 3 } }", "2\\sqrt3", true},
    {"\\boxed{x = 5}", "5", true},
    {"\\boxed{12 \\text{ dollars}}", "12", true},
    {"The answer is 18", "Janet sells 16 - 3 - 4 = 9 eggs... #### 18", true},
    {"The answer is 17", "... #### 18", false},
    // numbers and expressions
    {"\\boxed{0.5}", "\\frac{1}{2}", true},
    {"\\boxed{0.3333}", "\\frac{1}{3}", false},        // 1e-4 relative: outside the 1e-6 tolerance
    {"\\boxed{0.3333333333}", "\\frac{1}{3}", true},
    {"\\boxed{1001}", "1000", false},
    {"\\boxed{\\frac{2}{3}}", "\\frac{3}{2}", false},
    {"\\boxed{(1, 2, 3)}", "(1,2)", false},
    {"\\boxed{\\sqrt{2}}", "2", false},
    {"\\boxed{2\\pi}", "6.283185307", true},
    {"\\boxed{\\pi}", "3.14", false},
    {"\\boxed{\\sqrt{8}}", "2\\sqrt{2}", true},
    {"\\boxed{\\sqrt[3]{27}}", "3", true},
    {"\\boxed{2^{10}}", "1024", true},
    {"\\boxed{-3}", "3", false},
    {"\\boxed{2\\frac{1}{2}}", "\\frac{5}{2}", true},
    {"\\boxed{\\frac{-1}{2}}", "-0.5", true},
    {"\\boxed{1/3}", "\\frac{1}{3}", true},
    {"\\boxed{100}", "1e2", false},
    // percent rule
    {"\\boxed{50\\%}", "50", true},
    {"\\boxed{50\\%}", "0.5", true},
    {"\\boxed{25\\%}", "0.5", false},
    // tuples, intervals, sets, lists
    {"\\boxed{(1, -2)}", "(1,-2)", true},
    {"\\boxed{(-2, 1)}", "(1,-2)", false},
    {"\\boxed{[1, 2)}", "[1,2)", true},
    {"\\boxed{[1, 2]}", "[1,2)", false},
    {"\\boxed{(-\\infty, 3]}", "(-\\infty,3]", true},
    {"\\boxed{(-\\infty, 0) \\cup (1, \\infty)}", "(1,\\infty)\\cup(-\\infty,0)", true},
    {"\\boxed{\\{3, 1, 2\\}}", "\\{1,2,3\\}", true},
    {"\\boxed{\\{3, 1\\}}", "\\{1,2,3\\}", false},
    {"\\boxed{2, 5}", "5, 2", true},
    {"\\boxed{(\\frac{1}{2}, 3)}", "(0.5, 3)", true},
    // text answers
    {"\\boxed{\\text{(B)}}", "(B)", true},
    {"\\boxed{B}", "C", false},
    // the Minerva format and sentence endings
    {"Final Answer: The final answer is $\\frac{3}{2}$. I hope it is correct.", "1.5", true},
    {"Final Answer: The final answer is $-3, 2$. I hope it is correct.", "2, -3", true},
    {"Final Answer: The final answer is $\\$18$. I hope it is correct.", "18", true},
    {"Final Answer: The final answer is $17$. I hope it is correct.", "18", false},
    {"The answer is 18. Next we check it.", "18", true},
    {"So the answer is 42 apples.", "42", true},
    // {,} thousands, \binom, \sqrt without braces, exact integers
    {"\\boxed{1{,}000}", "1000", true},
    {"\\boxed{\\dbinom{6}{3}}", "20", true},
    {"\\boxed{\\binom{10}{3}}", "720", false},
    {"\\boxed{\\sqrt8}", "2\\sqrt{2}", true},
    {"\\boxed{12,345,678}", "12345687", false},  // integers compare exactly, not within 1e-6
    // membership, assignments joined by "or"
    {"\\boxed{x \\in [1, 3]}", "[1,3]", true},
    {"\\boxed{x \\in [1, 3]}", "[1,3)", false},
    {"\\boxed{x = 2 \\text{ or } x = 3}", "3, 2", true},
    {"\\boxed{x = 2 \\text{ or } x = 4}", "3, 2", false},
    {"\\boxed{a = 2, b = 3}", "b = 3, a = 2", true},
    {"\\boxed{a = 2, b = 3}", "a = 3, b = 2", false},  // names kept when the left sides differ
    // multiple choice
    {"\\boxed{\\text{(C)}}", "C", true},
    {"\\boxed{(C)}", "\\text{(C)}", true},
    {"\\boxed{C}", "\\text{(D)}", false},
    // \pm, sets against bare lists
    {"\\boxed{1 \\pm \\sqrt{2}}", "1+\\sqrt{2}, 1-\\sqrt{2}", true},
    {"\\boxed{\\pm 3}", "3", false},
    {"\\boxed{\\{-1, 1\\}}", "1, -1", true},
    {"\\boxed{\\{-1, 2\\}}", "1, -1", false},
    // free variables: the identity test
    {"\\boxed{x^2+5x+6}", "(x+2)(x+3)", true},
    {"\\boxed{x^2+5x+6}", "(x+1)(x+6)", false},
    {"\\boxed{\\frac{1}{x+1}}", "\\frac{x-1}{x^2-1}", true},
    {"\\boxed{\\frac{1}{x-1}}", "\\frac{x-1}{x^2-1}", false},
    {"\\boxed{6xy}", "6yx", true},
    {"\\boxed{6xy}", "6x+y", false},
    {"\\boxed{y = 2x+3}", "3+2x", true},
    {"\\boxed{p(x) = x^3-3x+2}", "(x-1)^2(x+2)", true},
    {"\\boxed{\\binom{n}{2}}", "\\frac{n(n-1)}{2}", true},
    {"\\boxed{2\\pi r}", "\\pi r^2", false},
    {"\\boxed{\\text{even}}", "\\text{neve}", false},  // a word (4+ letters) is not a product of variables
};
}  // namespace

TEST_CASE("math verifier table: at least 40 cases, true and false", "[reward][math]") {
  REQUIRE(sizeof(kCases) / sizeof(kCases[0]) >= 40);
  reward::MathVerifier v;
  int n_true = 0, n_false = 0;
  for (const auto& c : kCases) {
    INFO("response: " << c.response << "\nreference: " << c.reference);
    data::Example ex{"t", "", c.reference, "", "", ""};
    CHECK(v.score(c.response, ex).correct == c.equal);
    (c.equal ? n_true : n_false)++;
  }
  CHECK(n_true >= 15);
  CHECK(n_false >= 15);
}

TEST_CASE("fallbacks can be switched off", "[reward][math]") {
  reward::MathOptions o;
  o.answer_is_fallback = false;
  o.last_number_fallback = false;
  CHECK_FALSE(reward::extract_answer("The answer is 5", o).has_value());
  CHECK(*reward::extract_answer("\\boxed{5}", o) == "5");
  o.answer_is_fallback = true;
  CHECK(*reward::extract_answer("The answer is 5.\nAlso 6", o) == "5");
  CHECK_FALSE(reward::extract_answer("Also 6", o).has_value());
  o.last_number_fallback = true;
  CHECK(*reward::extract_answer("Also 6 and then 1,000", o) == "1,000");
}

TEST_CASE("expression evaluation", "[reward][math]") {
  CHECK(*reward::evaluate_math("1+2*3") == Approx(7));
  CHECK(*reward::evaluate_math("(1+2)*3") == Approx(9));
  CHECK(*reward::evaluate_math("2^3^2") == Approx(512));
  CHECK(*reward::evaluate_math("-2^2") == Approx(-4));  // ^ binds tighter than unary minus
  CHECK(*reward::evaluate_math("2^-1") == Approx(0.5));
  CHECK(*reward::evaluate_math("-\\frac{\\sqrt{3}}{2}") == Approx(-0.8660254));
  CHECK(*reward::evaluate_math("3\\pi") == Approx(9.42477796));
  CHECK(*reward::evaluate_math("\\sqrt{3}\\frac{1}{2}") == Approx(0.8660254));  // product, not a mixed number
  CHECK_FALSE(reward::evaluate_math("x+1").has_value());
  CHECK_FALSE(reward::evaluate_math("2 3").has_value());
  CHECK_FALSE(reward::evaluate_math("").has_value());
  CHECK_FALSE(reward::evaluate_math(std::string(100000, '(') + "1" + std::string(100000, ')')).has_value());
  CHECK(*reward::evaluate_math("\\binom{10}{3}") == Approx(120));
  CHECK(*reward::evaluate_math("\\sqrt8") == Approx(2.8284271));
}

TEST_CASE("expressions with variables", "[reward][math]") {
  const reward::MathVars vars{{"x", 2.0}, {"y", 3.0}, {"\\theta", 0.5}};
  CHECK(*reward::evaluate_with_vars("x^2+5x+6", vars) == Approx(20));
  CHECK(*reward::evaluate_with_vars("x(x+4)", vars) == Approx(12));
  CHECK(*reward::evaluate_with_vars("6xy", vars) == Approx(36));
  CHECK(*reward::evaluate_with_vars("\\frac{x}{y}", vars) == Approx(2.0 / 3));
  CHECK(*reward::evaluate_with_vars("2\\theta", vars) == Approx(1));
  CHECK_FALSE(reward::evaluate_with_vars("z+1", vars).has_value());           // unbound
  CHECK_FALSE(reward::evaluate_with_vars("\\sqrt{-x}", vars).has_value());  // NaN: outside the domain
  CHECK(*reward::math_variables("x^2y+\\alpha") == std::set<std::string>{"x", "y", "\\alpha"});
  CHECK(reward::math_variables("3\\pi")->empty());
  CHECK_FALSE(reward::math_variables("x=1").has_value());
}

TEST_CASE("symbolic equivalence: identity test over random points", "[reward][math]") {
  CHECK(reward::symbolic_equal("(2x+1)^3", "8x^3+12x^2+6x+1", 1e-6));
  CHECK_FALSE(reward::symbolic_equal("(2x+1)^3", "8x^3+12x^2+6x-1", 1e-6));
  CHECK(reward::symbolic_equal("\\frac{2x}{x^2-1}", "\\frac{1}{x-1}+\\frac{1}{x+1}", 1e-6));
  CHECK(reward::symbolic_equal("a^2-b^2", "(a-b)(a+b)", 1e-6));
  CHECK_FALSE(reward::symbolic_equal("x+1", "y+1", 1e-6));      // different variables
  CHECK_FALSE(reward::symbolic_equal("3", "3", 1e-6));          // no variables: not this rule's business
  CHECK_FALSE(reward::symbolic_equal("\\sqrt{-x^2-1}", "\\sqrt{-x^2-1}", 1e-6));  // defined nowhere
  CHECK_FALSE(reward::symbolic_equal("even", "neve", 1e-6));      // 4+ letters: a word, not a product
  CHECK(reward::symbolic_equal("xyz", "zyx", 1e-6));              // up to 3 letters: a product
}

TEST_CASE("format reward and voting keys", "[reward][math]") {
  reward::BoxedFormat f;
  data::Example ex{"t", "", "1", "", "", ""};
  CHECK(f.score("so \\boxed{1}", ex).reward == 1.0);
  CHECK(f.score("so 1", ex).reward == 0.0);
  reward::MathVerifier v;
  CHECK(v.voting_key("\\boxed{\\dfrac{1}{2}}") == v.voting_key("The answer is $\\frac{1}{2}$."));
}

TEST_CASE("degenerate responses: long runs and deep nesting are scored, not a crash", "[reward][math]") {
  // std::regex recurses per matched character: 100k-character runs used to overflow the stack.
  reward::MathVerifier v;
  data::Example ex{"t", "", "5", "", "", ""};
  for (const std::string& r : {"The sum is " + std::string(1000000, '1'), "\\boxed{" + std::string(200000, '1') + "}",
                               "The answer is " + std::string(200000, 'a') + " cm\n",
                               "\\boxed{" + std::string(100000, '(') + "5" + std::string(100000, ')') + "}",
                               std::string(200000, '$'), "$1" + std::string(200000, '$'), std::string(100000, '-') + "5",
                               [] { std::string s; for (int i = 0; i < 50000; ++i) s += "\\( x"; return s; }(),
                               [] { std::string s; for (int i = 0; i < 50000; ++i) s += "\\frac{1}{"; return s; }(),
                               [] { std::string s; for (int i = 0; i < 20000; ++i) s += "the answer is "; return s; }(),
                               [] { std::string s; for (int i = 0; i < 20000; ++i) s += "\\boxed{1} "; return s; }()}) {
    CHECK_FALSE(v.score(r, ex).correct);
  }
  std::string nested;
  for (int i = 0; i < 400; ++i) nested += "(1,";
  nested += std::string(400, ')');
  CHECK_FALSE(reward::answers_equivalent(nested, "1"));  // deeper than 50 brackets: not an answer
  CHECK(v.score("The sum is 1" + std::string(100000, ' ') + "then 5", ex).correct);
}

namespace {
// Issue #34's kinds: each new rule with true cases and the false near misses a looser rule would let through.
const Case kRuleCases[] = {
    // relations: spellings, mirrored sides, negated differences
    {"\\boxed{x >= 5}", "x \\geq 5", true},
    {"\\boxed{x \\ge 5}", "x \\geqslant 5", true},
    {"\\boxed{x < 3}", "x \\lt 3", true},
    {"\\boxed{x != 3}", "x \\neq 3", true},
    {"\\boxed{x \\leq 5}", "5 \\geq x", true},
    {"\\boxed{x < 1}", "-x > -1", true},
    {"\\boxed{1 < x \\le 3}", "1 < x \\leq 3", true},
    {"\\boxed{[5, \\infty)}", "x \\geq 5", true},    // a relation reference accepts its interval
    {"\\boxed{x > 5}", "x \\geq 5", false},          // strict against non-strict
    {"\\boxed{x \\leq 5}", "x \\geq 5", false},      // direction
    {"\\boxed{x \\geq 6}", "x \\geq 5", false},      // bound
    {"\\boxed{(5, \\infty)}", "x \\geq 5", false},   // the interval's bracket
    {"\\boxed{x \\geq 5}", "[5, \\infty)", false},   // not the other way round (Math-Verify's rule)
    {"\\boxed{2x > 4}", "x > 2", false},             // inequalities: differences equal, not scaled (Math-Verify)
    {"\\boxed{3 > x > 1}", "1 < x < 3", false},      // chains pair by pair, in order
    // equations
    {"$y=-\\frac{1}{2}x+\\frac{3}{4}$", "2x+4y-3=0", true},
    {"\\boxed{34x+45y-20z+100=0}", "-34x-45y+20z-100=0", true},
    {"\\boxed{x(2x+4y-3)=0}", "2x+4y-3=0", false},   // scaled by a variable
    {"\\boxed{2x+4y-5=0}", "2x+4y-3=0", false},
    {"\\boxed{2x+4z-3=0}", "2x+4y-3=0", false},      // another variable
    {"So $x = 5+5+1 = 11$.", "11", true},            // a chain's last side answers a plain reference
    {"So $x = 5+5+1 = 11$.", "10", false},
    {"\\boxed{x \\approx 11}", "11", true},
    {"\\boxed{y = 5}", "x = 5", false},              // both equations: names matter
    // matrices
    {"$\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}$", "\\left[\\begin{array}{cc}1&2\\\\3&4\\end{array}\\right]", true},
    {"\\boxed{\\begin{bmatrix} 0.5 & 0 \\\\ 0 & \\frac{1}{2} \\end{bmatrix}}", "\\frac{1}{2}\\begin{pmatrix}1&0\\\\0&1\\end{pmatrix}", true},
    {"\\boxed{\\begin{pmatrix} 1 & 2 \\\\ 3 & 5 \\end{pmatrix}}", "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", false},
    {"\\boxed{\\begin{pmatrix} 1 & 3 \\\\ 2 & 4 \\end{pmatrix}}", "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", false},
    {"\\boxed{\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}}", "(1, 2)", false},  // a column vector is no tuple
    {"\\boxed{\\begin{pmatrix} 1 & 2 \\end{pmatrix}}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}", false},  // shape
    // LaTeX forms and units
    {"\\boxed{\\cfrac{10}{9}}", "\\frac{10}{9}", true},
    {"\\boxed{125\\textnormal{ miles}}", "125", true},
    {"\\boxed{125\\textnormal{ miles}}", "126", false},
    {"\\boxed{124\\text{ km/h}}", "124", true},
    {"\\boxed{\\left( 3, 4 \\right)}", "(3,4)", true},
    {"\\boxed{\\\\frac{1}{2}}", "0.5", true},        // doubled backslashes (JSON-escaped text)
    {"\\boxed{\\tan^2(y)+1}", "\\sec^2(y)", true},
    {"\\boxed{\\tan^2(y)-1}", "\\sec^2(y)", false},
    {"\\boxed{\\sin^2 x + \\cos^2 x}", "1", true},
    {"\\boxed{2\\sin x\\cos x}", "\\sin 2x", true},
    {"\\boxed{\\sin x\\cos x}", "\\sin 2x", false},
    {"\\boxed{\\log_2 8}", "3", true},
    {"\\boxed{\\log 100}", "2", true},               // \log is base 10, as Math-Verify reads it
    {"\\boxed{\\ln(e^2)}", "2", true},
    {"\\boxed{5!}", "120", true},
    {"\\boxed{(-\\infty, \\infty)}", "\\mathbb{R}", true},
    // extraction from prose
    {"Solving the system, the ordered pair is $(7, 6)$.", "(7, 6)", true},
    {"Solving the system, the ordered pair is $(7, 6)$.", "(6, 7)", false},
    {"The answer is $12$, which is the number of marbles.", "12", true},
    {"**Answer:** $x = 5$", "5", true},
    {"So the solutions are $\\boxed{2}$ and $\\boxed{3}$.", "2, 3", true},
    {"So the solutions are $\\boxed{2}$ and $\\boxed{3}$.", "2", false},
    {"The ratio is \\frac{10}{9}.", "\\frac{10}{9}", true},
    {"It is sold as model XDY2K.", "2", false},      // a digit inside a word is no answer
    {"The final answer is −5.", "5", false},         // a Unicode minus sign
    {"The final answer is −5.", "-5", true},
    // conventions
    {"\\boxed{7,425,000}", "7425000", true},
    {"The total is 1 000 people.", "1000", true},
    {"\\boxed{.4}", "0.4", true},
    {"\\boxed{.4}", "\\frac{2}{5}", true},
    {"\\boxed{.4}", "4", false},
};
}  // namespace

TEST_CASE("math verifier: issue #34's rules, each with its near misses", "[reward][math]") {
  reward::MathVerifier v;
  int n_true = 0, n_false = 0;
  for (const auto& c : kRuleCases) {
    INFO("response: " << c.response << "\nreference: " << c.reference);
    CHECK(v.score(c.response, data::Example{"t", "", c.reference, "", "", ""}).correct == c.equal);
    (c.equal ? n_true : n_false)++;
  }
  CHECK(n_true >= 25);
  CHECK(n_false >= 20);
}

TEST_CASE("reference answers: as they are, or extracted like a response", "[reward][math]") {
  using reward::GoldMode;
  const std::string solution = "We have $a = 3$ and $b = 4$, so $c^2 = 9 + 16 = 25$ and $c = \\boxed{5}$.";
  CHECK(*reward::reference_answer(solution, GoldMode::kAuto) == "5");
  CHECK(*reward::reference_answer(solution, GoldMode::kExtract) == "5");
  CHECK(*reward::reference_answer(solution, GoldMode::kAnswer) == solution);
  CHECK(*reward::reference_answer("The answer is $\\frac{3}{4}$.", GoldMode::kAuto) == "\\frac{3}{4}");
  CHECK(*reward::reference_answer("$x=5$", GoldMode::kAuto) == "x=5");
  CHECK(*reward::reference_answer("x \\geq 5", GoldMode::kAuto) == "x \\geq 5");  // no marks: as it is
  CHECK(*reward::reference_answer("Natalia sold 48/2 = 24 clips.\n#### 72", GoldMode::kAuto) == "72");
  CHECK_FALSE(reward::reference_answer("We could not solve it.", GoldMode::kExtract).has_value());
  // A reference without an answer grades every response wrong, with a reason that gspo score / eval count.
  reward::MathOptions o;
  o.gold = GoldMode::kExtract;
  const auto s = reward::MathVerifier(o).score("\\boxed{5}", data::Example{"t", "", "No solution given.", "", "", ""});
  CHECK_FALSE(s.correct);
  CHECK(s.failure == reward::kNoReferenceAnswer);
  CHECK(reward::MathVerifier().score("\\boxed{5}", data::Example{"t", "", solution, "", "", ""}).correct);
}

TEST_CASE("expression evaluation: functions, e, factorial, absolute value", "[reward][math]") {
  CHECK(*reward::evaluate_math("\\sin\\frac{\\pi}{6}") == Approx(0.5));
  CHECK(*reward::evaluate_math("\\cos^2(0)") == Approx(1));
  CHECK(*reward::evaluate_math("\\log_{2}(8)") == Approx(3));
  CHECK(*reward::evaluate_math("\\log 1000") == Approx(3));
  CHECK(*reward::evaluate_math("\\ln e") == Approx(1));
  CHECK(*reward::evaluate_math("e^2") == Approx(7.3890561));
  CHECK(*reward::evaluate_math("4!") == Approx(24));
  CHECK(*reward::evaluate_math("|-3|") == Approx(3));
  CHECK(*reward::evaluate_math("\\arctan 1") == Approx(0.7853982));
  CHECK_FALSE(reward::evaluate_math("\\sin").has_value());  // a function without an argument
  const reward::MathVars vars{{"x", 0.7}};
  CHECK(*reward::evaluate_with_vars("\\sin 2x", vars) == Approx(std::sin(1.4)));
  CHECK(*reward::evaluate_with_vars("\\sin x\\cos x", vars) == Approx(std::sin(0.7) * std::cos(0.7)));
}

TEST_CASE("proportional differences: the test behind relations", "[reward][math]") {
  CHECK(reward::proportional("2x+4y-3", "(y)-(-\\frac{1}{2}x+\\frac{3}{4})", 0, false, 1e-6));  // c = 4
  CHECK(reward::proportional("x-5", "5-x", -1, true, 1e-6));
  CHECK_FALSE(reward::proportional("x-5", "5-x", 1, false, 1e-6));            // the sign is required
  CHECK_FALSE(reward::proportional("2x-4", "x-2", 1, true, 1e-6));            // exact_unit: c = 2 refused
  CHECK_FALSE(reward::proportional("x(2x+4y-3)", "2x+4y-3", 0, false, 1e-6));  // a variable factor
  CHECK_FALSE(reward::proportional("x-5", "y-5", 0, false, 1e-6));            // other variables
}
