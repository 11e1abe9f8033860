#include "gspo/reward/math/math_extract.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <cctype>
#include <regex>
#include <vector>

#include "gspo/reward/base/verifier.h"
#include "gspo/reward/math/math_normalize.h"
#include "gspo/reward/math/math_structure.h"
#include "gspo/reward/math/math_text.h"

namespace gspo::reward {
namespace {

constexpr size_t kMaxJoined = 6;          // math spans joined by and/or/, into one list at most

bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Whether a candidate's text reads as math; over kMaxAnswerChars it is no answer (and is never normalised: the
// normaliser's regexes recurse per character).
bool reads_math(const std::string& text) {
  return text.size() <= kMaxAnswerChars && reads_as_math(normalize_answer(text));
}

// Whether a math span holds a word answer written as LaTeX text: "\\text{Carla}", "\\textbf{Yes}" (letters and
// spaces in one text command). Prose between two currency signs is no such span.
bool text_answer(const std::string& text) {
  static const std::regex kText(R"(^\\(?:text|textbf|textrm|mathrm)\{\s*[A-Za-z][A-Za-z ]*\}$)");
  return text.size() <= 100 && std::regex_match(text, kText);
}

// A candidate of kinds 2 and 3: math, or a word answer in a math span.
bool reads_answer(const std::string& text) { return reads_math(text) || text_answer(text); }

// One place in the text that may hold the answer: [begin, end) and the answer text it gives.
struct Span {
  size_t begin = 0, end = 0;
  std::string text;
};

// Every \boxed{...} / \fbox{...} group, left to right (unbalanced ones run to the end of the text).
std::vector<Span> boxes(const std::string& r) {
  std::vector<Span> out;
  size_t pos = 0, b = r.find("\\boxed"), f = r.find("\\fbox");
  while (true) {
    if (b != std::string::npos && b < pos) b = r.find("\\boxed", pos);  // searches move forward only: linear
    if (f != std::string::npos && f < pos) f = r.find("\\fbox", pos);
    const size_t at = std::min(b, f);
    if (at == std::string::npos) break;
    size_t open = at + (at == b ? 6 : 5);
    while (open < r.size() && r[open] == ' ') ++open;
    if (open < r.size() && r[open] == '{') {
      size_t end = 0;
      if (auto inner = brace_group(r, open, &end)) {
        out.push_back({at, end, trim(*inner)});
        pos = end;
        continue;
      }
      out.push_back({at, r.size(), trim(r.substr(open + 1))});
      break;
    }
    if (open > at + (at == b ? 6 : 5) && open < r.size()) {  // \boxed 5
      size_t stop = r.find_first_of(" $\n", open);
      if (stop == std::string::npos) stop = r.size();
      out.push_back({at, stop, r.substr(open, stop - open)});
    }
    pos = open;
  }
  return out;
}

// The length of "\\frac{a}{b}" (or "-\\frac...") at r[i] with a and b plain numbers ("-?digits", one '.' or ','
// inside), 0 when there is none.
size_t bare_fraction(const std::string& r, size_t i) {
  size_t k = i + (r[i] == '-' ? 6 : 5);
  for (int part = 0; part < 2; ++part) {
    if (k >= r.size() || r[k] != '{') return 0;
    ++k;
    if (k < r.size() && r[k] == '-') ++k;
    const size_t digits = k;
    bool point = false;
    while (k < r.size() && (is_digit(r[k]) || (!point && (r[k] == '.' || r[k] == ',') && k > digits &&
                                               k + 1 < r.size() && is_digit(r[k + 1])))) {
      point = point || !is_digit(r[k]);
      ++k;
    }
    if (k == digits || k >= r.size() || r[k] != '}') return 0;
    ++k;
  }
  return k - i;
}

// Math spans of the text, left to right: $$...$$, $...$ (one line; not opened right after a digit or a backslash),
// \(...\), \[...\], and a bare \frac{a}{b} of two numbers outside them.
std::vector<Span> math_spans(const std::string& r) {
  std::vector<Span> out;
  size_t i = 0;
  // Searches only move forward, and a closer not found from one place is not found from a later one: the scan stays
  // linear on hostile text (100k unclosed "\\(" or '$' signs on one line).
  size_t next_newline = 0;
  std::map<std::string, bool> none_left;
  auto close = [&](size_t from, const std::string& c, bool one_line) -> size_t {
    if (none_left[c]) return std::string::npos;
    size_t k = from;
    while ((k = r.find(c, k)) != std::string::npos && r[k - 1] == '\\') ++k;  // \$ does not close
    if (k == std::string::npos) {
      none_left[c] = true;
      return k;
    }
    if (one_line) {
      if (next_newline != std::string::npos && next_newline < from) next_newline = r.find('\n', from);
      if (next_newline < k) return std::string::npos;
    }
    return k;
  };
  while ((i = r.find_first_of("$\\-", i)) != std::string::npos) {
    const bool escaped = i > 0 && r[i - 1] == '\\';
    std::string open, shut;
    bool one_line = false;
    if (r.compare(i, 2, "$$") == 0 && !escaped) {
      open = shut = "$$";
    } else if (r[i] == '$' && !escaped && !(i > 0 && is_digit(r[i - 1]))) {
      open = shut = "$";
      one_line = true;
    } else if (r.compare(i, 2, "\\(") == 0 && !escaped) {
      open = "\\(", shut = "\\)";
    } else if (r.compare(i, 2, "\\[") == 0 && !escaped) {
      open = "\\[", shut = "\\]";
    } else if (r.compare(i, 5, "\\frac") == 0 || (r[i] == '-' && r.compare(i + 1, 5, "\\frac") == 0)) {
      if (const size_t n = bare_fraction(r, i)) {
        out.push_back({i, i + n, r.substr(i, n)});
        i += n;
        continue;
      }
      ++i;
      continue;
    } else {
      ++i;
      continue;
    }
    const size_t end = close(i + open.size(), shut, one_line);
    if (end == std::string::npos || end == i + open.size()) {
      i += open.size();
      continue;
    }
    out.push_back({i, end + shut.size(), trim(r.substr(i + open.size(), end - i - open.size()))});
    i = end + shut.size();
  }
  return out;
}

// The end of the number starting at r[i] ("-"? then "1,234,567" or "1 234 567" with an optional decimal part,
// "3.5", ".5", "12", a decimal comma "2,5"; then "/4" and "%" when they follow), or i when none starts there.
// Groups of a thousands separator hold exactly 3 digits after a first digit other than 0 ("1 000" is a thousand,
// "3 4" is 3). A comma is a decimal comma when it is no thousands separator and no list follows: "2,5", "1500,75",
// "0,125", "1,22" (*comma set); "1,500" is 1500, and "1,2,3" is 1.
size_t scan_number(const std::string& r, size_t i, bool* comma = nullptr) {
  const size_t n = r.size();
  auto digits = [&](size_t k) {
    while (k < n && is_digit(r[k])) ++k;
    return k;
  };
  auto decimal = [&](size_t k) { return k + 1 < n && r[k] == '.' && is_digit(r[k + 1]) ? digits(k + 1) : k; };
  size_t k = i < n && r[i] == '-' ? i + 1 : i;
  if (k + 1 < n && r[k] == '.' && is_digit(r[k + 1])) {
    k = digits(k + 1);
  } else if (k < n && is_digit(r[k])) {
    const size_t start = k;
    k = digits(k);
    bool grouped = false;
    if (k - start <= 3 && r[start] != '0') {
      for (const char sep : {',', ' '}) {
        size_t g = k;
        while (g + 3 < n + 0 && r[g] == sep && is_digit(r[g + 1]) && is_digit(r[g + 2]) && is_digit(r[g + 3]) &&
               (sep == ',' || g + 4 >= n || !is_digit(r[g + 4])))
          g += 4;
        if (g > k) {
          k = g;
          grouped = true;
          break;
        }
      }
    }
    if (!grouped && k + 1 < n && r[k] == ',' && is_digit(r[k + 1])) {
      const size_t end = digits(k + 1);
      const bool thousands = end - (k + 1) == 3 && r[start] != '0';
      if (!thousands && !(end + 1 < n && r[end] == ',' && is_digit(r[end + 1]))) {
        k = end;
        if (comma) *comma = true;
      }
    }
    k = decimal(k);
  } else {
    return i;
  }
  if (k + 1 < n && r[k] == '/' && is_digit(r[k + 1])) k = digits(k + 1);
  size_t p = k;
  while (p < n && (r[p] == ' ' || r[p] == '\t')) ++p;
  if (p < n && r[p] == '%') k = p + 1;
  return k;
}

// Numbers standing alone: not after a letter, digit, '^', '_' or '\\' (so "XDY2K" and "x^2" hold none), in a
// left-to-right scan (a minus sign, also U+2212, belongs to the number).
std::vector<Span> numbers(const std::string& r) {
  std::vector<Span> out;
  for (size_t i = 0; i < r.size();) {
    bool comma = false;
    const size_t end = scan_number(r, i, &comma);
    if (end == i) {
      ++i;
      continue;
    }
    size_t first = r[i] == '-' ? i + 1 : i;  // the character before the digits decides
    size_t begin = i;
    std::string sign = r[i] == '-' ? "-" : "";
    if (first == i && first >= 3 && r.compare(first - 3, 3, "−") == 0) {  // U+2212 minus sign
      sign = "-";
      begin = first - 3;
    }
    const size_t before = begin == first ? first : begin;
    bool alone = true;
    if (before > 0) {
      const char p = r[before - 1];
      alone = !(is_alpha(p) || is_digit(p) || p == '^' || p == '_' || p == '\\' || p == '.');
    }
    if (alone) {
      std::string text = sign + r.substr(first, end - first);
      if (comma) std::replace(text.begin(), text.end(), ',', '.');  // "2,5" is 2.5
      out.push_back({begin, end, std::move(text)});
    }
    i = end;
  }
  return out;
}

// Whether only a list separator (",", "and", "or", ", and") lies between two spans.
bool joined(const std::string& between) {
  static const std::regex kSep(R"(^\s*(?:,?\s*(?:and|or)|,)\s*$)");
  return between.size() < 16 && std::regex_match(between, kSep);
}

// Whether the text between two bare boxes joins them into one list although it is more than a separator: under 70
// characters with ",", ";", "and" or "or" in it, within one sentence (no '.', ':', '!', '?' or line break) and no word
// that corrects the first box ("then", "but", "wait", "actually", "wrong", ...): "\\boxed{2} apples and \\boxed{5}
// pears", "\\boxed{3} coins, and Bob has \\boxed{7}", not "\\boxed{3}, then correcting: \\boxed{5}".
bool list_between(const std::string& between) {
  static const char* const kCorrections[] = {"then",  "but",     "wait",    "actually", "instead", "correct",
                                             "correction", "corrected", "correcting", "recheck", "rechecking",
                                             "mistake", "wrong",   "however", "so",       "thus",    "hence",
                                             "therefore", "not",   "no",      "sorry",    "rather",  "oops"};
  if (between.size() >= 70 || between.find_first_of(".:!?\n") != std::string::npos) return false;
  bool separator = between.find_first_of(",;") != std::string::npos;
  for (size_t i = 0; i < between.size();) {
    if (!is_alpha(between[i])) {
      ++i;
      continue;
    }
    size_t k = i;
    while (k < between.size() && is_alpha(between[k])) ++k;
    const std::string word = lower(between.substr(i, k - i));
    separator = separator || word == "and" || word == "or";
    for (const char* c : kCorrections)
      if (word == c) return false;
    i = k;
  }
  return separator;
}

// The last math span of `spans` (ending at or before `limit`) that reads as math, joined with the spans before it
// that only a separator divides from it.
std::optional<Span> last_math(const std::string& r, const std::vector<Span>& spans, size_t from, size_t limit) {
  for (size_t k = spans.size(); k-- > 0;) {
    const Span& s = spans[k];
    if (s.begin < from || s.end > limit) continue;
    if (!reads_answer(s.text)) continue;
    Span out = s;
    size_t n = 1;
    for (size_t j = k; j > 0 && n < kMaxJoined; --j, ++n) {
      const Span& prev = spans[j - 1];
      if (prev.begin < from || prev.end > spans[j].begin) break;
      if (!joined(r.substr(prev.end, spans[j].begin - prev.end))) break;
      if (!reads_math(prev.text)) break;
      out.text = prev.text + "," + out.text;
      out.begin = prev.begin;
    }
    return out;
  }
  return std::nullopt;
}

// Spans and numbers merged, ordered by where they start (a number inside a math span is not a candidate itself).
std::vector<Span> plain_candidates(const std::string& r, const std::vector<Span>& spans) {
  std::vector<Span> numbers_alone;
  size_t s = 0;  // both lists are ordered by position: one pass
  for (auto& n : numbers(r)) {
    while (s < spans.size() && spans[s].end <= n.begin) ++s;
    if (s < spans.size() && spans[s].begin < n.end) continue;  // inside a math span
    numbers_alone.push_back(std::move(n));
  }
  std::vector<Span> all;
  all.reserve(spans.size() + numbers_alone.size());
  std::merge(spans.begin(), spans.end(), numbers_alone.begin(), numbers_alone.end(), std::back_inserter(all),
             [](const Span& a, const Span& b) { return a.begin < b.begin; });
  return all;
}

// The boxes inside [begin, end), their contents joined by ',' (equal neighbours once).
std::string boxes_within(const std::vector<Span>& all, size_t begin, size_t end) {
  std::string out, last;
  for (const auto& b : all)
    if (b.begin >= begin && b.end <= end && b.text != last) {
      out += (out.empty() ? "" : ",") + b.text;
      last = b.text;
    }
  return out;
}

// Kind 1. When the last box sits in a math span ("$\\boxed{12}$"), that span's boxes, with the spans holding boxes
// just before it that "and" / "or" / "," divides from it ("$\\boxed{2}$ and $\\boxed{3}$"); a box in an earlier
// sentence is a draft, not part of the answer. A bare box: the boxes just before it with fewer than 10 characters
// or only a separator between ("\\boxed{2}, \\boxed{3}"), or one sentence listing them (list_between: "\\boxed{2}
// apples and \\boxed{5} pears"); Math-Verify joins any boxes up to 70 characters apart with a comma or "and" between,
// so "First \\boxed{3}, then correcting: \\boxed{5}" would answer "3, 5": we take the correction (docs/verifiers.md,
// kept differences). Equal neighbouring boxes count once.
std::optional<Span> boxed_answer(const std::string& r, const std::vector<Span>& spans) {
  const auto all = boxes(r);
  if (all.empty()) return std::nullopt;
  for (size_t k = spans.size(); k-- > 0;) {
    const Span& s = spans[k];
    if (!(s.begin <= all.back().begin && all.back().end <= s.end)) continue;
    Span out{s.begin, s.end, boxes_within(all, s.begin, s.end)};
    for (size_t j = k, n = 1; j > 0 && n < kMaxJoined; --j, ++n) {
      const Span& prev = spans[j - 1];
      const std::string inside = boxes_within(all, prev.begin, prev.end);
      if (inside.empty() || !joined(r.substr(prev.end, spans[j].begin - prev.end))) break;
      out.text = inside + "," + out.text;
      out.begin = prev.begin;
    }
    return out;
  }
  Span out = all.back();
  std::vector<std::string> parts{all.back().text};
  for (size_t k = all.size() - 1; k > 0; --k) {
    const Span& prev = all[k - 1];
    const std::string between = r.substr(prev.end, all[k].begin - prev.end);
    if (between.size() >= 10 && !joined(between) && !list_between(between)) break;
    if (prev.text != parts.back()) parts.push_back(prev.text);
    out.begin = prev.begin;
  }
  std::reverse(parts.begin(), parts.end());
  out.text.clear();
  for (const auto& p : parts) out.text += (out.text.empty() ? "" : ",") + p;
  return out;
}

// The first candidate starting at or after `pos` (candidates are ordered by where they start).
std::vector<Span>::const_iterator first_from(const std::vector<Span>& candidates, size_t pos) {
  return std::lower_bound(candidates.begin(), candidates.end(), pos,
                          [](const Span& c, size_t p) { return c.begin < p; });
}

// Kind 1 too: the math after "final answer ... is" (the phrase within 100 characters), the last such place.
std::optional<Span> final_answer_is(const std::string& r, const std::string& low,
                                    const std::vector<Span>& candidates) {
  std::optional<Span> best;
  size_t pos = 0;
  while ((pos = low.find("final answer", pos)) != std::string::npos) {
    const size_t is = low.find(" is", pos + 12);
    pos += 12;
    if (is == std::string::npos || is > pos + 100) continue;
    size_t at = is + 3;
    while (at < r.size() && (r[at] == ':' || is_space(r[at]))) ++at;
    const auto c = first_from(candidates, at);
    if (c != candidates.end() && c->begin == at && reads_math(c->text) && (!best || c->end > best->end)) best = *c;
  }
  return best;
}

// Kind 2: after each "answer" (any case), the first candidate within 50 characters, or the number after the last
// '=' within 100 characters; the answer of the last such place.
std::optional<Span> after_answer_word(const std::string& r, const std::string& low,
                                      const std::vector<Span>& candidates) {
  std::optional<Span> best;
  size_t pos = 0;
  while ((pos = low.find("answer", pos)) != std::string::npos) {
    pos += 6;
    const size_t eq = r.substr(pos, 100).rfind('=');
    const size_t start = eq == std::string::npos ? pos : pos + eq + 1;
    for (auto it = first_from(candidates, start); it != candidates.end(); ++it) {
      const Span& c = *it;
      if (c.begin > start + 50) break;
      const std::string after = trim(r.substr(c.end, 3));
      if (!after.empty() && after[0] == '=') continue;  // "answer: 2 + 3 = 5": not 2 + 3
      if (!reads_answer(c.text)) continue;
      if (!best || c.end > best->end) best = c;
      break;
    }
  }
  return best;
}

// The rest of the sentence after the last "the (final) answer is", when it holds words rather than math ("The
// answer is (C)."): up to ". " or the end of the line, '$' and a final '.' removed.
std::optional<std::string> answer_is_sentence(const std::string& r) {
  static const std::regex kAnswerIs(R"([Tt]he (?:final )?answer is[:\s]*)");
  size_t at = std::string::npos;
  for (auto it = std::sregex_iterator(r.begin(), r.end(), kAnswerIs); it != std::sregex_iterator(); ++it)
    at = static_cast<size_t>(it->position() + it->length());
  if (at == std::string::npos) return std::nullopt;
  const size_t eol = r.find('\n', at);
  std::string rest = r.substr(at, eol == std::string::npos ? std::string::npos : eol - at);
  if (size_t stop = rest.find(". "); stop != std::string::npos) rest = rest.substr(0, stop);
  rest.erase(std::remove(rest.begin(), rest.end(), '$'), rest.end());
  rest = trim(rest);
  while (!rest.empty() && rest.back() == '.') rest.pop_back();
  rest = trim(rest);
  if (rest.empty()) return std::nullopt;
  return rest;
}

}  // namespace

std::optional<std::string> last_boxed(const std::string& text) {
  const auto all = boxes(text);
  if (all.empty()) return std::nullopt;
  return all.back().text;
}

namespace {

// The candidate that answers, before the length limit.
std::optional<std::string> choose(const std::string& r, const ExtractOptions& opts) {
  const std::vector<Span> spans = math_spans(r);
  std::optional<Span> got = boxed_answer(r, spans);
  // The rest needs every candidate and a lower-case copy: computed only when a box does not settle it (a
  // "final answer" phrase after the box may).
  if (got && lower(r.substr(got->end)).find("final answer") == std::string::npos) return got->text;
  const std::string low = lower(r);
  const std::vector<Span> candidates = plain_candidates(r, spans);
  if (auto fa = final_answer_is(r, low, candidates); fa && (!got || fa->end > got->end)) got = fa;
  if (!got && opts.answer_phrase) got = after_answer_word(r, low, candidates);
  if (!got && opts.plain) got = last_math(r, candidates, 0, r.size());
  if (got) return got->text;
  if (opts.answer_phrase) return answer_is_sentence(r);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> extract_final_answer(const std::string& r, const ExtractOptions& opts) {
  auto text = choose(restore_control_escapes(r), opts);  // before boxes are found and trimmed: "\boxed{<FF>rac...}"
  if (text && text->size() > kMaxAnswerChars) return std::nullopt;  // not an answer (and would exhaust std::regex)
  return text;
}

}  // namespace gspo::reward
