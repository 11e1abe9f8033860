// Relations and equations as answers, compared the way Math-Verify 0.9.0 does (docs/verifiers.md, "Math"):
//   same operator: the differences lhs - rhs agree (equations: up to any non-zero constant factor, as solving both
//     gives the same solutions for "2x+4y-3=0" and "y=-x/2+3/4"; inequalities: exactly, "x >= 5" and "x-5 >= 0");
//   mirrored operators (< and >, <= and >=): the differences are opposite ("5 >= x" is "x <= 5", "-x > -1" is "x < 1");
//   chains ("1 < x < 3") pair by pair, in order; an assignment chain "x = 5 + 5 + 1 = 11" is "x = 11".
// A multiple by a variable is never equal ("x(2x+4y-3) = 0" is not "2x+4y-3 = 0"), nor is a strict against a
// non-strict inequality.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "gspo/reward/math/math_structure.h"

namespace gspo::reward {

// Equivalence of two (normalised) expressions, used for sides without variables.
using SideEqual = std::function<bool(const std::string&, const std::string&)>;

// An assignment chain reduced to its first and last sides; any other relation unchanged.
Relation first_and_last(const Relation& r);

bool relations_equal(const Relation& gold, const Relation& pred, double rel_tol, const SideEqual& sides_equal);

// A one-variable inequality (one name: x, a_1, g(x), or |w|) as an interval or union ("x >= 5" -> "[5,\infty)",
// "0 < g(x) <= 3" -> "(0,3]", "x != 3" -> "(-\infty,3)\cup(3,\infty)", "2 <= |w| < 3" -> "(-3,-2]\cup[2,3)"), or
// nullopt when it is not of that form.
std::optional<std::string> relation_as_interval(const Relation& r);

}  // namespace gspo::reward
