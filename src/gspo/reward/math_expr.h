// A small evaluator for the numeric answers of math problems written in plain text or simple LaTeX:
// integers, decimals, + - * / ^, parentheses and braces, \frac{a}{b}, \sqrt{x}, \sqrt[n]{x}, \pi, \infty,
// \cdot and \times, implicit multiplication (2\sqrt{3}, 3\pi, 2(1+x) is not: variables are not numbers).
#pragma once
#include <optional>
#include <string>

namespace gspo::reward {

// The value of `text` (already normalised, see math.h), or nullopt when it is not a closed numeric expression.
std::optional<double> evaluate_math(const std::string& text);

}  // namespace gspo::reward
