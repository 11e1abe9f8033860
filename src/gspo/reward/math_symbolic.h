// Equivalence of answers with free variables ("x^2+5x+6" and "(x+2)(x+3)") by a probabilistic identity test:
// both sides are evaluated (math_expr.h, every single letter a variable) at 8 fixed pseudo-random points and
// must agree at every point where both are defined. Two different polynomials or rational functions of low
// degree agree at a random real point with probability ~0, so a false "equal" needs a near-impossible
// coincidence; points where either side is undefined (a root of a negative number, a pole) are skipped.
// Cost: 16 evaluations of each side, O(length) each.
#pragma once
#include <string>

namespace gspo::reward {

// True when both normalised answers parse as expressions over the same non-empty set of variables, neither has a
// run of more than 3 letters (a word such as "yes" is not a product y*e*s), at least 4 of the 8 points are
// defined on both sides, and the values agree within rel_tol (absolute 1e-9) at each of them.
bool symbolic_equal(const std::string& a, const std::string& b, double rel_tol);

}  // namespace gspo::reward
