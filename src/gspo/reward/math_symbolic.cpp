#include "gspo/reward/math_symbolic.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <optional>

#include "gspo/reward/math_expr.h"

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

bool symbolic_equal(const std::string& a, const std::string& b, double rel_tol) {
  if (has_word(a) || has_word(b)) return false;
  auto va = math_variables(a), vb = math_variables(b);
  // The same variables; or one side constant ("\\sin^2 x + \\cos^2 x" and 1: an identity).
  if (!va || !vb || (va->empty() && vb->empty()) || (*va != *vb && !va->empty() && !vb->empty())) return false;
  if (va->empty()) va = vb;
  int defined = 0;
  for (int p = 0; p < kPoints; ++p) {
    MathVars vars;
    int k = 0;
    for (const auto& name : *va) vars[name] = point_value(p, k++);
    auto x = evaluate_with_vars(a, vars), y = evaluate_with_vars(b, vars);
    if (!x || !y || !std::isfinite(*x) || !std::isfinite(*y)) continue;
    if (std::abs(*x - *y) > std::max(1e-9, rel_tol * std::max(std::abs(*x), std::abs(*y)))) return false;
    ++defined;
  }
  return defined >= kMinDefined;
}

bool proportional(const std::string& a, const std::string& b, int sign, bool exact_unit, double rel_tol) {
  if (has_word(a) || has_word(b)) return false;
  auto va = math_variables(a), vb = math_variables(b);
  if (!va || !vb || va->empty() || *va != *vb) return false;
  std::optional<double> ratio;
  int defined = 0;
  for (int p = 0; p < kPoints; ++p) {
    MathVars vars;
    int k = 0;
    for (const auto& name : *va) vars[name] = point_value(p, k++);
    auto x = evaluate_with_vars(a, vars), y = evaluate_with_vars(b, vars);
    if (!x || !y || !std::isfinite(*x) || !std::isfinite(*y)) continue;
    const bool zx = std::abs(*x) <= 1e-9, zy = std::abs(*y) <= 1e-9;
    if (zx != zy) return false;
    if (zx) continue;
    const double c = *x / *y;
    if (!ratio) ratio = c;
    if (std::abs(c - *ratio) > std::max(1e-9, rel_tol * std::max(std::abs(c), std::abs(*ratio)))) return false;
    ++defined;
  }
  if (defined < kMinDefined || !ratio) return false;
  if ((sign > 0 && *ratio <= 0) || (sign < 0 && *ratio >= 0)) return false;
  return !exact_unit || std::abs(std::abs(*ratio) - 1) <= std::max(1e-9, rel_tol);
}

}  // namespace gspo::reward
