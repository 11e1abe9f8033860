// The math verifier's rules (docs/verifiers.md) as a table: extraction, normalisation, equivalence.
#include <catch2/catch.hpp>

#include "gspo/reward/math.h"
#include "gspo/reward/math_expr.h"
#include "gspo/reward/math_symbolic.h"

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
                               "\\boxed{" + std::string(100000, '(') + "5" + std::string(100000, ')') + "}"}) {
    CHECK_FALSE(v.score(r, ex).correct);
  }
  std::string nested;
  for (int i = 0; i < 400; ++i) nested += "(1,";
  nested += std::string(400, ')');
  CHECK_FALSE(reward::answers_equivalent(nested, "1"));  // deeper than 50 brackets: not an answer
  CHECK(v.score("The sum is 1" + std::string(100000, ' ') + "then 5", ex).correct);
}
