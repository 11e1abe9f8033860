// Per-field validation rules attached to each option in the options table (options.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace gspo::config {

struct Rule {
  std::optional<double> min;          // inclusive lower bound unless min_exclusive
  std::optional<double> max;          // inclusive upper bound unless max_exclusive
  bool min_exclusive = false;         // true: value must be > min
  std::vector<std::string> choices;   // non-empty: a string option must be one of these
  bool max_exclusive = false;         // true: value must be < max
};

inline Rule at_least(double v) { Rule r; r.min = v; return r; }
inline Rule greater_than(double v) { Rule r; r.min = v; r.min_exclusive = true; return r; }
inline Rule between(double lo, double hi) { Rule r; r.min = lo; r.max = hi; return r; }
// (lo, hi]: "in (0, 1]"
inline Rule above_up_to(double lo, double hi) { Rule r = between(lo, hi); r.min_exclusive = true; return r; }
// [lo, hi): "in [0, 1)"
inline Rule from_below(double lo, double hi) { Rule r = between(lo, hi); r.max_exclusive = true; return r; }
// (lo, hi): "in (0, 1)"
inline Rule strictly_between(double lo, double hi) { Rule r = above_up_to(lo, hi); r.max_exclusive = true; return r; }
inline Rule one_of(std::vector<std::string> c) { Rule r; r.choices = std::move(c); return r; }
inline Rule any() { return Rule{}; }

// Describes the rule for messages and docs: ">= 2", "one of gspo, grpo", "in [0, 1]", "in [0, 1)".
std::string describe(const Rule& r);
// Returns an empty string when `v` satisfies the numeric part of `r`, else the rule's description (a value that is
// not finite never does: NaN or inf in any numeric option is refused).
std::string check_number(const Rule& r, double v);

}  // namespace gspo::config
