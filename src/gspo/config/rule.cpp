#include "gspo/config/rule.h"

#include <cmath>
#include <sstream>

namespace gspo::config {
namespace {
std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

std::string describe(const Rule& r) {
  if (!r.choices.empty()) {
    std::string s = "one of ";
    for (size_t i = 0; i < r.choices.size(); ++i) s += (i ? ", " : "") + r.choices[i];
    return s;
  }
  if (r.min && r.max)
    return std::string("in ") + (r.min_exclusive ? "(" : "[") + num(*r.min) + ", " + num(*r.max) +
           (r.max_exclusive ? ")" : "]");
  if (r.min) return (r.min_exclusive ? "> " : ">= ") + num(*r.min);
  if (r.max) return (r.max_exclusive ? "< " : "<= ") + num(*r.max);
  return "";
}

std::string check_number(const Rule& r, double v) {
  if (!std::isfinite(v)) return describe(r).empty() ? "a finite number" : describe(r) + ", a finite number";
  bool ok = true;
  if (r.min) ok = ok && (r.min_exclusive ? v > *r.min : v >= *r.min);
  if (r.max) ok = ok && (r.max_exclusive ? v < *r.max : v <= *r.max);
  return ok ? "" : describe(r);
}

}  // namespace gspo::config
