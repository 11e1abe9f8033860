#include "gspo/reward/math/math_symbolic.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>

#include "gspo/reward/math/math_expr.h"

namespace gspo::reward {
namespace {

constexpr int kPoints = 8;       // evaluation points
constexpr int kMinDefined = 4;   // points that must be defined on both sides
constexpr size_t kMaxRun = 3;    // longest run of letters read as a product of variables

}  // namespace

bool has_word(const std::string& s) {
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\') {  // skip the command name
      while (i + 1 < s.size() && std::isalpha(static_cast<unsigned char>(s[i + 1]))) ++i;
      run = 0;
    } else if (s[i] == '_' && i + 1 < s.size() && s[i + 1] == '{') {  // a subscript is part of a name: S_{MBCN}
      for (int depth = 0; ++i < s.size();) {
        if (s[i] == '{') ++depth;
        if (s[i] == '}' && --depth == 0) break;
      }
      run = 0;
    } else if (std::isalpha(static_cast<unsigned char>(s[i]))) {
      if (++run > kMaxRun) return true;
    } else {
      run = 0;
    }
  }
  return false;
}

namespace {

// A fixed pseudo-random value in +-[0.6, 2.3] for variable `var` at point `point`: points 0-3 are positive
// (the domain of roots and logs), points 4-7 have random signs. SplitMix64, so the values are the same everywhere.
double point_value(int point, int var) {
  uint64_t z = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(point * 64 + var + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const double u = static_cast<double>(z >> 11) / 9007199254740992.0;  // [0, 1)
  const double v = 0.6 + 1.7 * u;
  return (point >= kPoints / 2 && (z & 1)) ? -v : v;
}

}  // namespace

namespace {

bool close(double u, double v, double rel_tol) {
  return std::abs(u - v) <= std::max(1e-9, rel_tol * std::max(std::abs(u), std::abs(v)));
}

// Evaluates `a` and `b` with `names` bound at each of the points; visit(x, y) sees the points where both are defined
// and finite and returns false to stop early (then so does this). The count of points visited goes to *defined.
template <class Visit>
bool at_points(const std::string& a, const std::string& b, const std::set<std::string>& names, int* defined,
               Visit visit) {
  *defined = 0;
  for (int p = 0; p < kPoints; ++p) {
    MathVars vars;
    int k = 0;
    for (const auto& name : names) vars[name] = point_value(p, k++);
    auto x = evaluate_with_vars(a, vars), y = evaluate_with_vars(b, vars);
    if (!x || !y || !std::isfinite(*x) || !std::isfinite(*y)) continue;
    if (!visit(*x, *y)) return false;
    ++*defined;
  }
  return true;
}

}  // namespace

bool symbolic_equal(const std::string& a, const std::string& b, double rel_tol) {
  if (has_word(a) || has_word(b)) return false;
  auto va = math_variables(a), vb = math_variables(b);
  // The same variables; or one side constant ("\\sin^2 x + \\cos^2 x" and 1: an identity).
  if (!va || !vb || (va->empty() && vb->empty()) || (*va != *vb && !va->empty() && !vb->empty())) return false;
  int defined = 0;
  return at_points(a, b, va->empty() ? *vb : *va, &defined,
                   [&](double x, double y) { return close(x, y, rel_tol); }) &&
         defined >= kMinDefined;
}

bool proportional(const std::string& a, const std::string& b, int sign, bool exact_unit, double rel_tol) {
  if (has_word(a) || has_word(b)) return false;
  auto va = math_variables(a), vb = math_variables(b);
  if (!va || !vb || va->empty() || *va != *vb) return false;
  std::optional<double> ratio;
  int defined = 0, nonzero = 0;
  const bool agree = at_points(a, b, *va, &defined, [&](double x, double y) {
    const bool zx = std::abs(x) <= 1e-9, zy = std::abs(y) <= 1e-9;
    if (zx || zy) return zx == zy;  // zero on one side only: no constant multiple
    if (!ratio) ratio = x / y;
    ++nonzero;
    return close(x / y, *ratio, rel_tol);
  });
  if (!agree || nonzero < kMinDefined) return false;
  if ((sign > 0 && *ratio <= 0) || (sign < 0 && *ratio >= 0)) return false;
  return !exact_unit || close(std::abs(*ratio), 1, rel_tol);
}

}  // namespace gspo::reward
