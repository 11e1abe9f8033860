#include "gspo/reward/math/math.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/reward/math/math_expr.h"
#include "gspo/reward/math/math_extract.h"
#include "gspo/reward/math/math_relation.h"
#include "gspo/reward/math/math_structure.h"
#include "gspo/reward/math/math_symbolic.h"
#include "gspo/reward/math/math_text.h"

namespace gspo::reward {
namespace {

bool scalar_equal(const std::string& a, const std::string& b, double tol) {
  if (a == b) return true;
  auto pct = [](const std::string& s) { return !s.empty() && s.back() == '%'; };
  std::string x = pct(a) ? a.substr(0, a.size() - 1) : a;
  std::string y = pct(b) ? b.substr(0, b.size() - 1) : b;
  static const std::regex kInteger(R"(^-?\d+$)");
  if (std::regex_match(x, kInteger) && std::regex_match(y, kInteger) && x == y) return true;
  const bool integers = std::regex_match(x, kInteger) && std::regex_match(y, kInteger) && !pct(a) && !pct(b);
  if (integers) return false;  // exact: 12345678 is not 12345687, though within the relative tolerance
  auto va = evaluate_math(x), vb = evaluate_math(y);
  if (!va || !vb) return !x.empty() && (x == y || symbolic_equal(x, y, tol));
  auto close = [tol](double u, double v) {
    if (std::isinf(u) || std::isinf(v)) return u == v;
    return std::abs(u - v) <= std::max(1e-9, tol * std::max(std::abs(u), std::abs(v)));
  };
  if (close(*va, *vb)) return true;
  // Percent rule: p% also matches p / 100.
  if (pct(a) && close(*va / 100.0, *vb)) return true;
  if (pct(b) && close(*va, *vb / 100.0)) return true;
  return false;
}

bool equivalent_norm(const std::string& gold, const std::string& pred, double tol);

// Two words that differ only in case ("Odd", "\\text{odd}"; Math-Verify lower-cases the names it reads). Single
// letters keep their case: x is not X.
bool same_word(const std::string& a, const std::string& b) {
  const auto word = [](const std::string& s) {
    return s.size() >= 2 &&
           std::all_of(s.begin(), s.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
  };
  if (a.size() != b.size() || !word(a) || !word(b)) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// The elements of `v` with repeats (the same text) dropped, in order.
std::vector<std::string> distinct(const std::vector<std::string>& v) {
  std::vector<std::string> out;
  for (const auto& e : v)
    if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
  return out;
}

// Element lists: ordered for tuples/intervals, unordered for sets and bare comma lists (sets, as in Math-Verify: an
// element written twice counts once, "(1,2),(3,4),(1,2)" = "(3,4),(1,2)").
bool lists_equal(const std::vector<std::string>& xs, const std::vector<std::string>& ys, bool ordered, double tol) {
  if (ordered) {
    if (xs.size() != ys.size()) return false;
    for (size_t i = 0; i < xs.size(); ++i)
      if (!equivalent_norm(xs[i], ys[i], tol)) return false;
    return true;
  }
  const auto x = distinct(xs), y = distinct(ys);
  if (x.size() != y.size()) return false;
  std::vector<char> used(y.size(), 0);
  for (const auto& e : x) {
    bool found = false;
    for (size_t j = 0; j < y.size() && !found; ++j)
      if (!used[j] && equivalent_norm(e, y[j], tol)) used[j] = found = true;
    if (!found) return false;
  }
  return true;
}

// "a\pm b" -> "a+b,a-b" (one \pm, outside any list); other text unchanged.
std::string expand_pm(const std::string& s) {
  const size_t at = s.find("\\pm");
  if (at == std::string::npos || s.find("\\pm", at + 1) != std::string::npos || split_top(s).size() > 1 ||
      (at + 3 < s.size() && std::isalpha(static_cast<unsigned char>(s[at + 3]))))  // \pmod
    return s;
  return s.substr(0, at) + "+" + s.substr(at + 3) + "," + s.substr(0, at) + "-" + s.substr(at + 3);
}

// Whether the bracket opening s[0] closes at the last character ("(1,2)" but not "(1,2)\\cup(3,4)").
bool encloses(const std::string& s) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(' || s[i] == '[' || s[i] == '{') ++depth;
    if (s[i] == ')' || s[i] == ']' || s[i] == '}') --depth;
    if (depth == 0 && i + 1 < s.size()) return false;
  }
  return depth == 0;
}

// Lists, relations, unions, matrices, brackets, then scalars. Not symmetric (Math-Verify's rules): `gold` is the
// reference. An equation answering a plain reference is read as its last side ("x = 5 + 6 = 11" answers 11); an
// assignment reference ("x = 5") against a plain answer as its right side; a one-variable inequality reference
// accepts its interval ("x >= 5" and "[5, \\infty)"), not the other way round.
bool equivalent_norm(const std::string& gold_in, const std::string& pred_in, double tol) {
  if (gold_in.empty() || pred_in.empty()) return false;
  if (gold_in == pred_in) return true;
  std::string g = expand_pm(gold_in), p = expand_pm(pred_in);
  const auto brackets = [](const std::string& s) -> std::pair<char, char> {
    if (s.size() >= 2 && std::string("([{").find(s.front()) != std::string::npos &&
        std::string(")]}").find(s.back()) != std::string::npos && encloses(s))
      return {s.front(), s.back()};
    return {0, 0};
  };
  const auto inner = [](const std::string& s) { return split_top(s.substr(1, s.size() - 2)); };
  // Bare lists ("x = 2, x = 3" is a list of equations); a set {a, b} equals the bare list of its elements, a tuple
  // reference (a, b) a bare list in its order.
  const auto lg = split_top(g), lp = split_top(p);
  if (lg.size() > 1 || lp.size() > 1) {
    if (lg.size() > 1 && lp.size() > 1) return lists_equal(lg, lp, false, tol);
    if (lp.size() > 1 && brackets(g).first == '{') return lists_equal(inner(g), lp, false, tol);
    if (lg.size() > 1 && brackets(p).first == '{') return lists_equal(lg, inner(p), false, tol);
    // A bare list answering a tuple reference, in written order ("2, 3" or "a = 2, b = 3" for "(2, 3)").
    if (lp.size() > 1 && brackets(g) == std::pair<char, char>{'(', ')'}) return lists_equal(inner(g), lp, true, tol);
    return false;
  }
  // Relations and equations.
  auto rg = split_relation(g), rp = split_relation(p);
  if (rp && rp->all_equal() && !rg) {
    p = rp->sides.back();
    rp.reset();
  } else if (rg && rg->assignment() && !(rp && rp->all_equal())) {
    g = rg->sides.back();
    rg.reset();
  }
  if (rg && rp)
    return relations_equal(*rg, *rp, tol, [tol](const std::string& a, const std::string& b) {
      return equivalent_norm(a, b, tol);
    });
  if (rg) {
    auto interval = relation_as_interval(*rg);
    return interval && equivalent_norm(*interval, p, tol);
  }
  if (rp) return false;
  if (g == p || same_word(g, p)) return true;
  // Unions of intervals.
  if (g.find("\\cup") != std::string::npos || p.find("\\cup") != std::string::npos) {
    replace_all(g, "\\cup", ",");
    replace_all(p, "\\cup", ",");
    return lists_equal(split_top(g), split_top(p), false, tol);
  }
  // Matrices, entry by entry.
  const auto mg = parse_matrix(g), mp = parse_matrix(p);
  if (mg || mp) {
    if (!mg || !mp || mg->size() != mp->size() || (*mg)[0].size() != (*mp)[0].size()) return false;
    for (size_t r = 0; r < mg->size(); ++r)
      if (!lists_equal((*mg)[r], (*mp)[r], true, tol)) return false;
    return true;
  }
  // Tuples, intervals, sets.
  auto [go, gc] = brackets(g);
  auto [po, pc] = brackets(p);
  const bool g_list = go && inner(g).size() > 1;
  const bool p_list = po && inner(p).size() > 1;
  if (g_list || p_list) {
    if (!(g_list && p_list)) return false;
    // A set and a tuple (as Math-Verify compares them): a set reference takes a tuple in any order, a tuple reference
    // a set's elements in written order ({2,1} does not answer (1,2)); neither is an interval with a bracket.
    const bool g_set = go == '{', p_set = po == '{', g_tuple = go == '(' && gc == ')', p_tuple = po == '(' && pc == ')';
    if (g_set && p_set) return lists_equal(inner(g), inner(p), false, tol);
    if (g_set && p_tuple)  // a tuple keeps its repeats: (1,2,2) is not {1,2}
      return inner(p).size() == distinct(inner(g)).size() && lists_equal(inner(g), inner(p), false, tol);
    if (g_tuple && p_set) return lists_equal(inner(g), inner(p), true, tol);
    if (g_set || p_set || go != po || gc != pc) return false;  // (1,2] is not [1,2]
    return lists_equal(inner(g), inner(p), true, tol);
  }
  return scalar_equal(g, p, tol);
}

// An escaped dollar sign ("\\$32,\\!348", MATH-500's money answers) opens no math: the field is taken as it is.
bool needs_extraction(const std::string& field) {
  for (const char* mark : {"\\boxed", "\\fbox", "\\(", "\\["})
    if (field.find(mark) != std::string::npos) return true;
  for (size_t at = field.find('$'); at != std::string::npos; at = field.find('$', at + 1))
    if (at == 0 || field[at - 1] != '\\') return true;
  static const std::regex kAnswerWord(R"([Aa]nswer(?: is|:))");
  return std::regex_search(field, kAnswerWord);
}

}  // namespace

std::optional<std::string> reference_answer(const std::string& raw, GoldMode mode) {
  const std::string field = restore_control_escapes(raw);
  if (mode != GoldMode::kExtract) {
    if (auto pos = field.rfind("####"); pos != std::string::npos) return trim(field.substr(pos + 4));  // GSM8K
    if (mode == GoldMode::kAnswer || !needs_extraction(field)) return field;
  }
  return extract_final_answer(field, {});
}

std::optional<std::string> extract_answer(const std::string& response, const MathOptions& o) {
  return extract_final_answer(response, {o.answer_is_fallback, o.last_number_fallback});
}

bool answers_equivalent(const std::string& pred, const std::string& gold, double rel_tol) {
  if (pred.size() > kMaxAnswerChars || gold.size() > kMaxAnswerChars) return false;
  const std::string x = normalize_answer(pred), y = normalize_answer(gold);
  if (x == y) return !x.empty();
  // Lists recurse per bracket level: text nested deeper than any answer is not one (and must not exhaust the stack).
  if (bracket_depth(x) > kMaxNesting || bracket_depth(y) > kMaxNesting) return false;
  return equivalent_norm(y, x, rel_tol);
}

Score MathVerifier::score(const std::string& response, const data::Example& ex) const {
  const auto gold = reference_answer(ex.answer, opts_.gold);
  if (!gold) return {0.0, false, "reference: none found", {}, kNoReferenceAnswer};
  auto got = extract_answer(response, opts_);
  const bool ok = got && answers_equivalent(*got, *gold, opts_.rel_tol);
  return {ok ? 1.0 : 0.0, ok, got ? "answer: " + got->substr(0, 200) : "no answer found", {},
          ok ? "" : got ? "wrong answer" : "no answer found"};
}

std::string MathVerifier::voting_key(const std::string& response) const {
  auto got = extract_answer(response, opts_);
  return got ? normalize_answer(*got) : "";
}

Score BoxedFormat::score(const std::string& response, const data::Example&) const {
  const bool ok = last_boxed(response).has_value();
  return {ok ? 1.0 : 0.0, ok, "", {}, ok ? "" : "no \\boxed{} answer"};
}

MathOptions math_options(const config::Config& cfg) {
  const auto& m = cfg.reward.math;
  const GoldMode gold = m.gold == config::MathGold::kExtract  ? GoldMode::kExtract
                        : m.gold == config::MathGold::kAnswer ? GoldMode::kAnswer
                                                              : GoldMode::kAuto;
  return {m.answer_is, m.last_number, m.rel_tol, gold};
}

}  // namespace gspo::reward
