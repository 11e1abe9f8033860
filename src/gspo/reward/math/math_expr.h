// A small evaluator for the answers of math problems written in plain text or simple LaTeX:
// integers, decimals, + - * / ^, parentheses and braces, \frac{a}{b} (also \frac12), \binom{n}{k}, \sqrt{x}
// (also \sqrt2), \sqrt[n]{x}, \pi, e (Euler's number, as Math-Verify reads a lone e), \infty, \cdot, \times,
// \div, a ratio a:b (a / b), |x|, n!, a numeral with its base as subscript (231_4 = 45), implicit multiplication
// (2\sqrt{3}, 3\pi, 2x, x(x+4)), an integer followed by \frac as a mixed number (2\frac{1}{2} = 2.5), and
// functions: \sin \cos \tan \sec \csc \cot, \arcsin \arccos \arctan, \sinh \cosh \tanh, \exp, \ln, \log (base 10;
// \log_b x base b), with a power (\sin^2 x) and an argument in parentheses or braces or a product up to the next
// operator or function (\sin 2x = sin(2x)).
// Without variables (evaluate_math) a letter other than e makes the text non-numeric. With variables
// (evaluate_with_vars), each single letter a-z/A-Z but e and each Greek-letter command (\alpha, \theta, ...) is a
// variable, its subscript part of its name (G_j and G_{m-j} are two variables, x_1 and x_{1} one): "xy" is x*y.
// A value that overflows or divides by zero (x/0, 12:00, 2^{1025}, \ln 0) is no number: only \infty is infinite.
// Non-goals: complex numbers, relations (math_structure.h splits those first).
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>

namespace gspo::reward {

using MathVars = std::map<std::string, double>;

// The value of `text` (already normalised, see math.h), or nullopt when it is not a closed numeric expression.
std::optional<double> evaluate_math(const std::string& text);
// The value of `text` with its variables bound by `vars`; nullopt when it does not parse, a variable is unbound
// or the value is NaN (e.g. a square root of a negative number at this point).
std::optional<double> evaluate_with_vars(const std::string& text, const MathVars& vars);
// The variables of `text` (letters and Greek-letter commands), or nullopt when it does not parse as an expression.
std::optional<std::set<std::string>> math_variables(const std::string& text);

}  // namespace gspo::reward
