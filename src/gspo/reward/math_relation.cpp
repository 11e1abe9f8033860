#include "gspo/reward/math_relation.h"

#include <cctype>
#include <map>

#include "gspo/reward/math_expr.h"
#include "gspo/reward/math_symbolic.h"

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

bool is_variable(const std::string& s) {
  return (s.size() == 1 && std::isalpha(static_cast<unsigned char>(s[0])) && s != "e");
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
    if (!is_variable(var)) {
      std::swap(var, val);
      op = kMirror.at(op);
    }
    if (!is_variable(var) || !bound(val)) return std::nullopt;
    if (op == "<") return "(-" + inf + "," + val + ")";
    if (op == "<=") return "(-" + inf + "," + val + "]";
    if (op == ">") return "(" + val + "," + inf + ")";
    if (op == ">=") return "[" + val + "," + inf + ")";
    if (op == "!=") return "(-" + inf + "," + val + ")\\cup(" + val + "," + inf + ")";
    return std::nullopt;
  }
  if (r.ops.size() == 2 && is_variable(r.sides[1]) && bound(r.sides[0]) && bound(r.sides[2])) {
    const std::string &a = r.ops[0], &b = r.ops[1];
    const bool up = (a == "<" || a == "<=") && (b == "<" || b == "<=");
    const bool down = (a == ">" || a == ">=") && (b == ">" || b == ">=");
    if (up) return (a == "<" ? "(" : "[") + r.sides[0] + "," + r.sides[2] + (b == "<" ? ")" : "]");
    if (down) return (b == ">" ? "(" : "[") + r.sides[2] + "," + r.sides[0] + (a == ">" ? ")" : "]");
  }
  return std::nullopt;
}

}  // namespace gspo::reward
