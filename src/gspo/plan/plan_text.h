// gspo plan's arithmetic written out (internal to plan/): numbers as a term's formula shows them, MiB, and a phase's
// sum of terms.
#pragma once
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "gspo/plan/plan_types.h"

namespace gspo::plan {

inline constexpr double kMiB = 1024.0 * 1024.0;

inline std::string num(double v) {
  std::ostringstream o;
  if (std::abs(v) >= 1e9) o.precision(4);
  else o.precision(6);
  o << v;
  return o.str();
}

inline std::string mib(double bytes) { return num(std::round(bytes / kMiB)) + " MiB"; }

inline double sum(const std::vector<Term>& ts) {
  double s = 0;
  for (const auto& t : ts) s += t.bytes;
  return s;
}

}  // namespace gspo::plan
