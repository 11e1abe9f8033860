#include "gspo/reward/math/math_relation.h"

#include <cctype>
#include <cmath>
#include <map>

#include "gspo/reward/math/math_expr.h"
#include "gspo/reward/math/math_symbolic.h"

namespace gspo::reward {
namespace {

const std::map<std::string, std::string> kMirror = {{"<", ">"}, {">", "<"}, {"<=", ">="}, {">=", "<="},
                                                    {"=", "="}, {"!=", "!="}};

std::string difference(const std::string& lhs, const std::string& rhs) { return "(" + lhs + ")-(" + rhs + ")"; }

bool one_equal(const std::string& gl, const std::string& gop, const std::string& gr, const std::string& pl,
               const std::string& pop, const std::string& pr, double tol, const SideEqual& sides_equal) {
  const bool equation = gop == "=" || gop == "!=";
  if (gop == pop) {
    if (sides_equal(gl, pl) && sides_equal(gr, pr)) return true;
    if (equation && sides_equal(gl, pr) && sides_equal(gr, pl)) return true;
    return proportional(difference(gl, gr), difference(pl, pr), equation ? 0 : 1, !equation, tol);
  }
  if (kMirror.at(gop) == pop) {
    if (sides_equal(gl, pr) && sides_equal(gr, pl)) return true;
    return proportional(difference(gl, gr), difference(pl, pr), -1, true, tol);
  }
  return false;
}

// One bounded quantity: x, a_1, g(x) (not |w|: absolute_interval reads those).
bool is_variable(const std::string& s) { return single_name(s) && s.front() != '|'; }
bool is_absolute(const std::string& s) { return single_name(s) && s.front() == '|'; }

// The set where lo <op_lo> |w| <op_hi> hi holds, 0 < lo < hi numbers: "[-3,-2]\cup[2,3]" for 2 <= |w| <= 3 (the
// brackets mirrored on the negative side). An empty lo is no lower bound ("|w| < 3" -> "(-3,3)"), an empty hi no
// upper one ("|w| >= 2" -> "(-\infty,-2]\cup[2,\infty)").
std::optional<std::string> absolute_interval(const std::string& lo, bool lo_strict, const std::string& hi,
                                             bool hi_strict) {
  const auto vlo = lo.empty() ? std::optional<double>(0) : evaluate_math(lo);
  const auto vhi = hi.empty() ? std::optional<double>(INFINITY) : evaluate_math(hi);
  if (!vlo || !vhi || *vlo < 0 || *vlo >= *vhi || (lo.empty() && hi.empty())) return std::nullopt;
  const std::string inf = "\\infty";
  const std::string top = hi.empty() ? inf : hi, bottom = hi.empty() ? "-" + inf : "-" + hi;
  const char* close = hi.empty() || hi_strict ? ")" : "]";
  const char* open = hi.empty() || hi_strict ? "(" : "[";
  if (lo.empty()) return std::string(open) + bottom + "," + top + close;
  const char* inner_close = lo_strict ? ")" : "]";
  const char* inner_open = lo_strict ? "(" : "[";
  return std::string(open) + bottom + ",-" + lo + inner_close + "\\cup" + inner_open + lo + "," + top + close;
}

}  // namespace

Relation first_and_last(const Relation& r) {
  if (!r.assignment() || r.sides.size() <= 2) return r;
  return Relation{{r.sides.front(), r.sides.back()}, {"="}};
}

bool relations_equal(const Relation& gold_in, const Relation& pred_in, double tol, const SideEqual& sides_equal) {
  const Relation gold = first_and_last(gold_in), pred = first_and_last(pred_in);
  if (gold.ops.size() != pred.ops.size()) return false;
  for (size_t i = 0; i < gold.ops.size(); ++i)
    if (!one_equal(gold.sides[i], gold.ops[i], gold.sides[i + 1], pred.sides[i], pred.ops[i], pred.sides[i + 1], tol,
                   sides_equal))
      return false;
  return true;
}

std::optional<std::string> relation_as_interval(const Relation& r) {
  const std::string inf = "\\infty";
  auto bound = [](const std::string& s) { return evaluate_math(s).has_value(); };
  if (r.ops.size() == 1) {
    std::string var = r.sides[0], val = r.sides[1], op = r.ops[0];
    if (!is_variable(var) && !is_absolute(var)) {
      std::swap(var, val);
      op = kMirror.at(op);
    }
    if (is_absolute(var) && bound(val)) {
      if (op == "<" || op == "<=") return absolute_interval("", false, val, op == "<");
      if (op == ">" || op == ">=") return absolute_interval(val, op == ">", "", false);
      return std::nullopt;
    }
    if (!is_variable(var) || !bound(val)) return std::nullopt;
    if (op == "<") return "(-" + inf + "," + val + ")";
    if (op == "<=") return "(-" + inf + "," + val + "]";
    if (op == ">") return "(" + val + "," + inf + ")";
    if (op == ">=") return "[" + val + "," + inf + ")";
    if (op == "!=") return "(-" + inf + "," + val + ")\\cup(" + val + "," + inf + ")";
    return std::nullopt;
  }
  if (r.ops.size() == 2 && (is_variable(r.sides[1]) || is_absolute(r.sides[1])) && bound(r.sides[0]) &&
      bound(r.sides[2])) {
    const std::string &a = r.ops[0], &b = r.ops[1];
    const bool up = (a == "<" || a == "<=") && (b == "<" || b == "<=");
    const bool down = (a == ">" || a == ">=") && (b == ">" || b == ">=");
    if (is_absolute(r.sides[1])) {
      if (up) return absolute_interval(r.sides[0], a == "<", r.sides[2], b == "<");
      if (down) return absolute_interval(r.sides[2], b == ">", r.sides[0], a == ">");
      return std::nullopt;
    }
    if (up) return (a == "<" ? "(" : "[") + r.sides[0] + "," + r.sides[2] + (b == "<" ? ")" : "]");
    if (down) return (b == ">" ? "(" : "[") + r.sides[2] + "," + r.sides[0] + (a == ">" ? ")" : "]");
  }
  return std::nullopt;
}

}  // namespace gspo::reward
