// Filters, tests, str/dict methods and globals of the Jinja subset, each as jinja2 3.1 and Python define it
// (jinja2/filters.py, jinja2/tests.py) plus transformers' tojson, raise_exception and strftime_now. An unknown name
// throws: a template must never render with a construct quietly ignored.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "gspo/tokenizer/jinja_detail.h"

namespace gspo::tokenizer::jinja {
namespace {

using K = Value::Kind;

[[noreturn]] void type_error(const std::string& what) { throw std::runtime_error(what); }

// Argument `pos` (after the value itself for filters: callers pass the index into `args`) or keyword `name`.
const Value* arg(const List& args, const Kwargs& kwargs, size_t pos, const char* name) {
  for (const auto& [k, v] : kwargs)
    if (k == name) return &v;
  return pos < args.size() ? &args[pos] : nullptr;
}

std::string str_arg(const List& args, const Kwargs& kwargs, size_t pos, const char* name, const std::string& dflt) {
  const Value* v = arg(args, kwargs, pos, name);
  if (!v || v->is(K::None)) return dflt;
  if (!v->is(K::String)) type_error(std::string("argument '") + name + "' must be a string");
  return v->s;
}

int64_t int_arg(const List& args, const Kwargs& kwargs, size_t pos, const char* name, int64_t dflt) {
  const Value* v = arg(args, kwargs, pos, name);
  if (!v || v->is(K::None)) return dflt;
  if (!v->is(K::Int)) type_error(std::string("argument '") + name + "' must be an integer");
  return v->i;
}

bool is_ws(char32_t c) { return c == ' ' || (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x1f) || c == 0x85 || c == 0xa0; }

// str.strip / lstrip / rstrip: whitespace, or any of `chars`.
std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  const std::u32string u = utf32(s), set = chars && chars->is(K::String) ? utf32(chars->s) : std::u32string();
  const bool ws = !chars || chars->is(K::None);
  auto drop = [&](char32_t c) { return ws ? is_ws(c) : set.find(c) != std::u32string::npos; };
  size_t a = 0, b = u.size();
  while (left && a < b && drop(u[a])) ++a;
  while (right && b > a && drop(u[b - 1])) --b;
  return utf8(u.substr(a, b - a));
}

// str.split(sep=None, maxsplit=-1).
Value split(const std::string& s, const Value* sep, int64_t maxsplit) {
  List parts;
  if (!sep || sep->is(K::None)) {
    const std::u32string u = utf32(s);
    size_t k = 0;
    while (k < u.size()) {
      while (k < u.size() && is_ws(u[k])) ++k;
      if (k == u.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        size_t e = u.size();
        while (e > k && is_ws(u[e - 1])) --e;
        parts.push_back(Value::string(utf8(u.substr(k, e - k))));
        break;
      }
      size_t e = k;
      while (e < u.size() && !is_ws(u[e])) ++e;
      parts.push_back(Value::string(utf8(u.substr(k, e - k))));
      k = e;
    }
    return Value::make_list(std::move(parts));
  }
  if (!sep->is(K::String) || sep->s.empty()) type_error("split: the separator must be a non-empty string");
  size_t k = 0;
  for (size_t hit; (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) &&
                   (hit = s.find(sep->s, k)) != std::string::npos;
       k = hit + sep->s.size())
    parts.push_back(Value::string(s.substr(k, hit - k)));
  parts.push_back(Value::string(s.substr(k)));
  return Value::make_list(std::move(parts));
}

std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  if (from.empty()) type_error("replace of an empty string is not supported");
  std::string out;
  size_t k = 0;
  for (size_t hit; count != 0 && (hit = s.find(from, k)) != std::string::npos; k = hit + from.size(), --count)
    out += s.substr(k, hit - k) + to;
  return out + s.substr(k);
}

bool is_alpha(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= 0xc0 && c != 0xd7 && c != 0xf7); }

// Python's str.title (`word_start` null) or jinja's title filter (words start after -, whitespace, (, {, [, <).
std::string title(const std::string& s, bool filter) {
  std::u32string u = utf32(s);
  bool start = true;
  for (char32_t& c : u) {
    const std::string one = utf8(std::u32string(1, c));
    c = utf32(start ? upper(one) : lower(one))[0];
    start = filter ? (is_ws(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<') : !is_alpha(c);
  }
  return utf8(u);
}

bool starts_or_ends(const std::string& s, const Value& probe, bool start) {
  if (probe.is_sequence()) {
    for (const Value& p : *probe.list)
      if (starts_or_ends(s, p, start)) return true;
    return false;
  }
  if (!probe.is(K::String)) type_error("startswith/endswith take a string or a tuple of strings");
  const std::string& p = probe.s;
  if (p.size() > s.size()) return false;
  return start ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0;
}

Value string_method(const std::string& s, const std::string& name, const List& a, const Kwargs& kw) {
  const Value* a0 = arg(a, kw, 0, "__a0");
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return Value::string(strip(s, a0, name != "rstrip", name != "lstrip"));
  if (name == "split") return split(s, arg(a, kw, 0, "sep"), int_arg(a, kw, 1, "maxsplit", -1));
  if (name == "startswith" || name == "endswith") {
    if (!a0) type_error(name + "() takes at least 1 argument");
    return Value::boolean(starts_or_ends(s, *a0, name == "startswith"));
  }
  if (name == "upper") return Value::string(upper(s));
  if (name == "lower") return Value::string(lower(s));
  if (name == "title") return Value::string(title(s, false));
  if (name == "capitalize") {
    const std::u32string u = utf32(s);
    return Value::string(u.empty() ? s : upper(utf8(u.substr(0, 1))) + lower(utf8(u.substr(1))));
  }
  if (name == "replace")
    return Value::string(replace(s, str_arg(a, kw, 0, "old", ""), str_arg(a, kw, 1, "new", ""),
                                 int_arg(a, kw, 2, "count", -1)));
  if (name == "count" || name == "find") {
    const std::string sub = str_arg(a, kw, 0, "sub", "");
    if (name == "find") {
      const size_t hit = s.find(sub);
      return Value::integer(hit == std::string::npos ? -1 : static_cast<int64_t>(utf32(s.substr(0, hit)).size()));
    }
    int64_t n = 0;
    for (size_t k = s.find(sub); !sub.empty() && k != std::string::npos; k = s.find(sub, k + sub.size())) ++n;
    return Value::integer(n);
  }
  type_error("unsupported str method '" + name + "'");
}

}  // namespace

Value call_method(const Value& obj, const std::string& name, const List& args, const Kwargs& kwargs) {
  if (obj.is(K::String)) return string_method(obj.s, name, args, kwargs);
  if (obj.is(K::Dict)) {
    if (name == "get") {
      if (args.empty()) type_error("get expected at least 1 argument");
      const Value* v = args[0].is(K::String) ? obj.find(args[0].s) : nullptr;
      return v ? *v : args.size() > 1 ? args[1] : Value::none();
    }
    List out;
    for (const auto& [k, v] : *obj.dict) {
      if (name == "items") out.push_back(Value::make_list({Value::string(k), v}, true));
      else if (name == "keys") out.push_back(Value::string(k));
      else if (name == "values") out.push_back(v);
      else type_error("unsupported dict method '" + name + "'");
    }
    return Value::make_list(std::move(out));
  }
  type_error("unsupported " + type_name(obj) + " method '" + name + "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case K::String:
      if (!item.is(K::String)) type_error("'in <string>' requires string as left operand, not " + type_name(item));
      return container.s.find(item.s) != std::string::npos;
    case K::List: case K::Tuple:
      return std::any_of(container.list->begin(), container.list->end(), [&](const Value& v) { return equal(v, item); });
    case K::Dict: return item.is(K::String) && container.find(item.s);
    case K::Undefined: return false;
    default: type_error("argument of type '" + type_name(container) + "' is not iterable");
  }
}

int compare(const Value& a, const Value& b) {
  const bool an = a.is_number() || a.is(K::Bool), bn = b.is_number() || b.is(K::Bool);
  if (an && bn) {
    auto d = [](const Value& v) { return v.is(K::Float) ? v.f : v.is(K::Bool) ? double(v.b) : double(v.i); };
    if (!a.is(K::Float) && !b.is(K::Float)) {
      const int64_t x = a.is(K::Bool) ? a.b : a.i, y = b.is(K::Bool) ? b.b : b.i;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    return d(a) < d(b) ? -1 : d(a) > d(b) ? 1 : 0;
  }
  if (a.is(K::String) && b.is(K::String)) return a.s < b.s ? -1 : a.s > b.s ? 1 : 0;
  if (a.is_sequence() && b.is_sequence() && a.kind == b.kind) {
    for (size_t k = 0; k < std::min(a.list->size(), b.list->size()); ++k)
      if (const int c = compare((*a.list)[k], (*b.list)[k])) return c;
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
  }
  type_error("'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

bool call_test(const std::string& name, const List& a) {
  const Value& v = a[0];
  auto other = [&]() -> const Value& {
    if (a.size() < 2) type_error("the test '" + name + "' takes an argument");
    return a[1];
  };
  if (name == "defined") return !v.is(K::Undefined);
  if (name == "undefined") return v.is(K::Undefined);
  if (name == "none") return v.is(K::None);
  if (name == "string") return v.is(K::String);
  if (name == "mapping") return v.is(K::Dict);
  if (name == "iterable") return v.is(K::String) || v.is_sequence() || v.is(K::Dict) || v.is(K::Undefined);
  if (name == "sequence") return v.is(K::String) || v.is_sequence() || v.is(K::Dict);
  if (name == "number") return v.is_number() || v.is(K::Bool);
  if (name == "integer") return v.is(K::Int);
  if (name == "float") return v.is(K::Float);
  if (name == "boolean") return v.is(K::Bool);
  if (name == "true" || name == "false") return v.is(K::Bool) && v.b == (name == "true");
  if (name == "callable") return v.is(K::Function);
  if (name == "even" || name == "odd") {
    if (!v.is(K::Int)) type_error("the test '" + name + "' needs an integer");
    return (((v.i % 2) + 2) % 2 == 0) == (name == "even");
  }
  if (name == "divisibleby") return v.is(K::Int) && other().is(K::Int) && other().i != 0 && v.i % other().i == 0;
  if (name == "eq" || name == "equalto" || name == "==") return equal(v, other());
  if (name == "ne" || name == "!=") return !equal(v, other());
  if (name == "lt" || name == "lessthan" || name == "<") return compare(v, other()) < 0;
  if (name == "le" || name == "<=") return compare(v, other()) <= 0;
  if (name == "gt" || name == "greaterthan" || name == ">") return compare(v, other()) > 0;
  if (name == "ge" || name == ">=") return compare(v, other()) >= 0;
  if (name == "in") return contains(other(), v);
  if (name == "lower" || name == "upper") return v.is(K::String) && (name == "lower" ? lower(v.s) : upper(v.s)) == v.s;
  type_error("unsupported test '" + name + "'");
}

namespace {

List items_of(const Value& v) {
  if (v.is(K::Undefined)) return {};
  if (v.is_sequence()) return *v.list;
  if (v.is(K::Dict)) {
    List keys;
    for (const auto& kv : *v.dict) keys.push_back(Value::string(kv.first));
    return keys;
  }
  if (v.is(K::String)) {
    List chars;
    for (char32_t c : utf32(v.s)) chars.push_back(Value::string(utf8(std::u32string(1, c))));
    return chars;
  }
  type_error("'" + type_name(v) + "' object is not iterable");
}

// jinja's attribute getter: "a.b.0" walks dicts and list indices; a missing part is undefined.
Value get_attr_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t k = 0;
  while (k <= path.size()) {
    const size_t dot = std::min(path.find('.', k), path.size());
    const std::string part = path.substr(k, dot - k);
    if (const Value* x = cur.find(part)) cur = *x;
    else if (cur.is_sequence() && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit) &&
             std::stoul(part) < cur.list->size())
      cur = (*cur.list)[std::stoul(part)];
    else return Value::undefined(part);
    k = dot + 1;
  }
  return cur;
}

// select / reject / selectattr / rejectattr.
Value select(const std::string& name, const List& a) {
  const bool by_attr = name == "selectattr" || name == "rejectattr";
  const bool keep = name == "select" || name == "selectattr";
  size_t next = 1;
  std::string attr;
  if (by_attr) {
    if (a.size() < 2 || !a[1].is(K::String)) type_error(name + " needs an attribute name");
    attr = a[1].s;
    next = 2;
  }
  List out;
  for (const Value& x : items_of(a[0])) {
    const Value probe = by_attr ? get_attr_path(x, attr) : x;
    bool hit;
    if (next >= a.size()) {
      hit = truthy(probe);
    } else {
      if (!a[next].is(K::String)) type_error(name + ": the test name must be a string");
      List targs{probe};
      targs.insert(targs.end(), a.begin() + static_cast<long>(next) + 1, a.end());
      hit = call_test(a[next].s, targs);
    }
    if (hit == keep) out.push_back(x);
  }
  return Value::make_list(std::move(out));
}

Value map_filter(const List& a, const Kwargs& kw) {
  List out;
  const Value* attr = arg({}, kw, 0, "attribute");
  for (const Value& x : items_of(a[0])) {
    if (attr) {
      Value v = get_attr_path(x, to_str(*attr));
      if (v.is(K::Undefined))
        if (const Value* d = arg({}, kw, 0, "default")) v = *d;
      out.push_back(v);
      continue;
    }
    if (a.size() < 2 || !a[1].is(K::String)) type_error("map needs a filter name or attribute=");
    List fargs{x};
    fargs.insert(fargs.end(), a.begin() + 2, a.end());
    out.push_back(call_filter(a[1].s, fargs, {}));
  }
  return Value::make_list(std::move(out));
}

Value sorted(const List& a, const Kwargs& kw, bool reverse_default) {
  List items = items_of(a[0]);
  const Value* rev = arg(a, kw, 1, "reverse");
  const Value* cs = arg(a, kw, 2, "case_sensitive");
  const Value* attr = arg(a, kw, 3, "attribute");
  const bool reverse = rev ? truthy(*rev) : reverse_default, case_sensitive = cs && truthy(*cs);
  auto key = [&](const Value& v) {
    Value k = attr ? get_attr_path(v, to_str(*attr)) : v;
    return k.is(K::String) && !case_sensitive ? Value::string(lower(k.s)) : k;
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return reverse ? compare(key(y), key(x)) < 0 : compare(key(x), key(y)) < 0;
  });
  return Value::make_list(std::move(items));
}

Value min_max(const List& a, const Kwargs& kw, bool is_max) {
  List items = items_of(a[0]);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  const Value* attr = arg(a, kw, 2, "attribute");
  auto key = [&](const Value& v) {
    Value k = attr ? get_attr_path(v, to_str(*attr)) : v;
    return k.is(K::String) ? Value::string(lower(k.s)) : k;
  };
  Value best = items[0];
  for (const Value& x : items)
    if (is_max ? compare(key(x), key(best)) > 0 : compare(key(x), key(best)) < 0) best = x;
  return best;
}

std::string join(const List& a, const Kwargs& kw) {
  const std::string sep = str_arg(a, kw, 1, "d", "");
  const Value* attr = arg(a, kw, 2, "attribute");
  std::string out;
  bool first = true;
  for (const Value& x : items_of(a[0])) {
    out += (first ? "" : sep) + to_str(attr ? get_attr_path(x, to_str(*attr)) : x);
    first = false;
  }
  return out;
}

// jinja's truncate(s, length=255, killwords=False, end='...', leeway=5).
std::string truncate(const List& a, const Kwargs& kw) {
  const std::u32string s = utf32(to_str(a[0]));
  const int64_t length = int_arg(a, kw, 1, "length", 255), leeway = int_arg(a, kw, 4, "leeway", 5);
  const Value* kill = arg(a, kw, 2, "killwords");
  const std::u32string end = utf32(str_arg(a, kw, 3, "end", "..."));
  if (static_cast<int64_t>(s.size()) <= length + leeway) return utf8(s);
  const size_t keep = static_cast<size_t>(std::max<int64_t>(0, length - static_cast<int64_t>(end.size())));
  if (kill && truthy(*kill)) return utf8(s.substr(0, keep) + end);
  std::u32string head = s.substr(0, keep);
  const size_t space = head.rfind(static_cast<char32_t>(' '));
  if (space != std::u32string::npos) head = head.substr(0, space);
  return utf8(head + end);
}

std::string center(const std::string& s, int64_t width) {
  const int64_t n = static_cast<int64_t>(utf32(s).size()), marg = width - n;
  if (marg <= 0) return s;
  const int64_t left = marg / 2 + (marg & width & 1);
  return std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(marg - left), ' ');
}

// jinja's indent(s, width=4, first=False, blank=False).
std::string indent(const List& a, const Kwargs& kw) {
  const Value* w = arg(a, kw, 1, "width");
  const std::string pad = w && w->is(K::String) ? w->s : std::string(static_cast<size_t>(w ? w->i : 4), ' ');
  const Value *first = arg(a, kw, 2, "first"), *blank = arg(a, kw, 3, "blank");
  std::vector<std::string> lines;
  const std::string s = to_str(a[0]) + "\n";
  for (size_t k = 0, e; (e = s.find('\n', k)) != std::string::npos; k = e + 1) lines.push_back(s.substr(k, e - k));
  std::string out;
  for (size_t k = 0; k < lines.size(); ++k) {
    const bool pad_line = k > 0 && (!lines[k].empty() || (blank && truthy(*blank)));
    out += (k ? "\n" : "") + (pad_line ? pad : "") + lines[k];
  }
  return (first && truthy(*first) ? pad : "") + out;
}

Value to_int(const Value& v, const Value* dflt) {
  if (v.is(K::Int)) return v;
  if (v.is(K::Bool)) return Value::integer(v.b);
  if (v.is(K::Float)) return Value::integer(static_cast<int64_t>(v.f));
  if (v.is(K::String)) {
    try {
      size_t used = 0;
      const std::string t = strip(v.s, nullptr, true, true);
      const double d = std::stod(t, &used);
      if (used == t.size()) return Value::integer(static_cast<int64_t>(d));
    } catch (const std::exception&) {
    }
  }
  return dflt ? *dflt : Value::integer(0);
}

Value aggregate_filter(const std::string& name, const List& a, const Kwargs& kw) {
  const Value& v = a[0];
  if (name == "length" || name == "count") {
    if (v.is(K::String)) return Value::integer(static_cast<int64_t>(utf32(v.s).size()));
    if (v.is(K::Undefined)) return Value::integer(0);
    if (v.is_sequence()) return Value::integer(static_cast<int64_t>(v.list->size()));
    if (v.is_mapping()) return Value::integer(static_cast<int64_t>(v.dict->size()));
    type_error("object of type '" + type_name(v) + "' has no len()");
  }
  if (name == "first" || name == "last") {
    const List items = items_of(v);
    if (items.empty()) return Value::undefined("No first item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return Value::make_list(items_of(v));
  if (name == "items") {
    if (v.is(K::Undefined)) return Value::make_list({});
    if (!v.is_mapping()) type_error("Can only get item pairs from a mapping.");
    List out;
    for (const auto& [k, x] : *v.dict) out.push_back(Value::make_list({Value::string(k), x}, true));
    return Value::make_list(std::move(out));
  }
  if (name == "reverse") {
    if (v.is(K::String)) {
      std::u32string u = utf32(v.s);
      std::reverse(u.begin(), u.end());
      return Value::string(utf8(u));
    }
    List items = items_of(v);
    std::reverse(items.begin(), items.end());
    return Value::make_list(std::move(items));
  }
  if (name == "sort") return sorted(a, kw, false);
  if (name == "max" || name == "min") return min_max(a, kw, name == "max");
  if (name == "unique") {
    List out;
    for (const Value& x : items_of(v))
      if (std::none_of(out.begin(), out.end(), [&](const Value& y) { return equal(x, y); })) out.push_back(x);
    return Value::make_list(std::move(out));
  }
  if (name == "sum") {
    const Value* attr = arg(a, kw, 1, "attribute");
    Value total = Value::integer(int_arg(a, kw, 2, "start", 0));
    for (const Value& x : items_of(v)) {
      const Value y = attr ? get_attr_path(x, to_str(*attr)) : x;
      if (!y.is_number() && !y.is(K::Bool)) type_error("sum of a non-number '" + type_name(y) + "'");
      const bool fl = total.is(K::Float) || y.is(K::Float);
      const double yd = y.is(K::Float) ? y.f : double(y.is(K::Bool) ? y.b : y.i);
      total = fl ? Value::real((total.is(K::Float) ? total.f : double(total.i)) + yd)
                 : Value::integer(total.i + (y.is(K::Bool) ? y.b : y.i));
    }
    return total;
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") return select(name, a);
  if (name == "map") return map_filter(a, kw);
  if (name == "join") return Value::string(join(a, kw));
  return Value::undefined("");  // not an aggregate: the caller goes on
}

}  // namespace

Value call_filter(const std::string& name, const List& a, const Kwargs& kw) {
  const Value& v = a[0];
  const Value agg = aggregate_filter(name, a, kw);
  if (!(agg.is(K::Undefined) && agg.s.empty())) return agg;
  if (name == "default" || name == "d") {
    const Value* boolean = arg(a, kw, 2, "boolean");
    const bool use = v.is(K::Undefined) || (boolean && truthy(*boolean) && !truthy(v));
    const Value* dflt = arg(a, kw, 1, "default_value");
    return use ? (dflt ? *dflt : Value::string("")) : v;
  }
  if (name == "tojson") {
    for (const char* unsupported : {"separators", "sort_keys", "ensure_ascii"})
      if (const Value* x = arg({}, kw, 0, unsupported); x && truthy(*x) && !x->is(K::None))
        type_error(std::string("tojson(") + unsupported + "=...) is not supported");
    const Value* ind = arg(a, kw, 2, "indent");
    return Value::string(to_json(v, ind && ind->is(K::Int) ? static_cast<int>(ind->i) : -1));
  }
  if (name == "safe") return v;
  if (name == "string") return Value::string(to_str(v));
  if (name == "int") return to_int(v, arg(a, kw, 1, "default"));
  if (name == "float") {
    if (v.is(K::Float)) return v;
    if (v.is(K::Int) || v.is(K::Bool)) return Value::real(double(v.is(K::Int) ? v.i : v.b));
    try {
      return Value::real(std::stod(v.s));
    } catch (const std::exception&) {
      const Value* d = arg(a, kw, 1, "default");
      return d ? *d : Value::real(0);
    }
  }
  if (name == "abs") return v.is(K::Float) ? Value::real(std::fabs(v.f)) : Value::integer(std::llabs(v.i));
  const std::string s = to_str(v);
  if (name == "trim") return Value::string(strip(s, arg(a, kw, 1, "chars"), true, true));
  if (name == "upper") return Value::string(upper(s));
  if (name == "lower") return Value::string(lower(s));
  if (name == "capitalize") return call_method(Value::string(s), "capitalize", {}, {});
  if (name == "title") return Value::string(title(s, true));
  if (name == "replace")
    return Value::string(replace(s, str_arg(a, kw, 1, "old", ""), str_arg(a, kw, 2, "new", ""),
                                 int_arg(a, kw, 3, "count", -1)));
  if (name == "truncate") return Value::string(truncate(a, kw));
  if (name == "center") return Value::string(center(s, int_arg(a, kw, 1, "width", 80)));
  if (name == "indent") return Value::string(indent(a, kw));
  type_error("unsupported filter '" + name + "'");
}

namespace {

Value range_fn(const List& a) {
  if (a.empty() || a.size() > 3) type_error("range expected 1 to 3 arguments");
  for (const Value& x : a)
    if (!x.is(K::Int)) type_error("range arguments must be integers");
  const int64_t start = a.size() > 1 ? a[0].i : 0, stop = a.size() > 1 ? a[1].i : a[0].i,
                step = a.size() > 2 ? a[2].i : 1;
  if (step == 0) type_error("range() arg 3 must not be zero");
  if ((stop - start) / step > 100000) type_error("range too big (the sandbox allows 100000 items)");
  List out;
  for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) out.push_back(Value::integer(k));
  return Value::make_list(std::move(out));
}

Value dict_from(const List& a, const Kwargs& kw, bool is_namespace) {
  Dict d;
  if (!a.empty()) {
    if (a.size() > 1 || !a[0].is_mapping()) type_error("namespace()/dict() take one mapping and keywords");
    d = *a[0].dict;
  }
  for (const auto& [k, v] : kw) {
    auto it = std::find_if(d.begin(), d.end(), [&](const auto& kv) { return kv.first == k; });
    if (it != d.end()) it->second = v;
    else d.emplace_back(k, v);
  }
  return Value::make_dict(std::move(d), is_namespace);
}

}  // namespace

std::unordered_map<std::string, Value> globals(const std::optional<std::tm>& now) {
  std::unordered_map<std::string, Value> g;
  g["range"] = Value::function([](const List& a, const Kwargs&) { return range_fn(a); });
  g["namespace"] = Value::function([](const List& a, const Kwargs& kw) { return dict_from(a, kw, true); });
  g["dict"] = Value::function([](const List& a, const Kwargs& kw) { return dict_from(a, kw, false); });
  g["raise_exception"] = Value::function([](const List& a, const Kwargs&) -> Value {
    throw std::runtime_error(a.empty() ? std::string("raise_exception() without a message") : to_str(a[0]));
  });
  g["strftime_now"] = Value::function([now](const List& a, const Kwargs&) {
    if (a.size() != 1 || !a[0].is(K::String)) type_error("strftime_now takes one format string");
    std::tm t{};
    if (now) {
      t = *now;
    } else {
      const std::time_t clock = std::time(nullptr);
      localtime_r(&clock, &t);
    }
    char buf[256];
    const size_t n = std::strftime(buf, sizeof buf, a[0].s.c_str(), &t);
    return Value::string(std::string(buf, n));
  });
  return g;
}

}  // namespace gspo::tokenizer::jinja
