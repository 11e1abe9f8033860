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

// Whether a = c * b for one constant c != 0 at every point where both are defined (the same random points, the same
// variable set, non-empty; at least 4 points where both sides are non-zero, and neither side zero where the other is
// not). sign > 0 requires c > 0, sign < 0 c < 0, sign 0 any; exact_unit additionally requires |c| = 1.
// The test of relations and equations: "2x + 4y - 3" and "y - (-x/2 + 3/4)" (c = 4); "x(2x+4y-3)" is no multiple.
bool proportional(const std::string& a, const std::string& b, int sign, bool exact_unit, double rel_tol);

// Whether some run of letters outside a \command and a braced subscript is longer than 3 (a word such as "yes", not
// a product y*e*s; S_{MBCN} is a name).
bool has_word(const std::string& s);

}  // namespace gspo::reward
