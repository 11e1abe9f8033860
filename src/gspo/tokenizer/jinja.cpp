// The Jinja evaluator (jinja.h): statements, expressions, scopes, and transformers' apply_chat_template variables.
// Filters, tests, methods and globals are in jinja_builtins.cpp.
#include "gspo/tokenizer/jinja.h"

#include <cmath>
#include <unordered_map>

#include "gspo/tokenizer/jinja_detail.h"

namespace gspo::tokenizer::jinja {
namespace {

using Scope = std::unordered_map<std::string, Value>;
enum class Flow { Normal, Break, Continue };

class Interp {
 public:
  Interp(const Program& p, const std::optional<std::tm>& now) : p_(p), now_(now) {}

  std::string run(const nlohmann::ordered_json& context) {
    scopes_.push_back(globals(now_));
    Scope ctx;
    for (auto it = context.begin(); it != context.end(); ++it) ctx[it.key()] = Value::from_json(it.value());
    scopes_.push_back(std::move(ctx));
    std::string out;
    exec(p_.body, out);
    return out;
  }

 private:
  [[noreturn]] void error(int line, const std::string& what) const { fail(p_.origin, line, what); }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return Value::undefined(name);
  }

  Flow exec(const Body& body, std::string& out) {
    for (const auto& n : body) {
      const Flow f = exec_node(*n, out);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  Flow exec_node(const Node& n, std::string& out) {
    switch (n.kind) {
      case Node::Kind::Text: out += n.text; return Flow::Normal;
      case Node::Kind::Output: out += to_str(eval(*n.exprs[0])); return Flow::Normal;
      case Node::Kind::If:
        for (size_t k = 0; k < n.exprs.size(); ++k)
          if (truthy(eval(*n.exprs[k]))) return exec(n.bodies[k], out);
        return exec(n.bodies.back(), out);
      case Node::Kind::For: exec_for(n, out); return Flow::Normal;
      case Node::Kind::Set: exec_set(n); return Flow::Normal;
      case Node::Kind::SetBlock: {
        std::string text;
        exec(n.bodies[0], text);
        scopes_.back()[n.text] = Value::string(text);
        return Flow::Normal;
      }
      case Node::Kind::Macro: scopes_.back()[n.text] = macro(n); return Flow::Normal;
      case Node::Kind::Break: return Flow::Break;
      case Node::Kind::Continue: return Flow::Continue;
      case Node::Kind::Block: return exec(n.bodies[0], out);
    }
    return Flow::Normal;
  }

  void assign(const std::vector<std::string>& names, const Value& v, Scope& scope, int line) {
    if (names.size() == 1) {
      scope[names[0]] = v;
      return;
    }
    List items = iterate(v, line);
    if (items.size() != names.size())
      error(line, "cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(names.size()) +
                      " names");
    for (size_t k = 0; k < names.size(); ++k) scope[names[k]] = items[k];
  }

  void exec_set(const Node& n) {
    const Value v = eval(*n.exprs[0]);
    if (n.names.empty()) {  // ns.attr = v
      const size_t dot = n.text.find('.');
      Value ns = lookup(n.text.substr(0, dot));
      if (!ns.is(Value::Kind::Namespace))
        error(n.line, "cannot assign attribute on non-namespace object '" + n.text.substr(0, dot) + "'");
      const std::string attr = n.text.substr(dot + 1);
      for (auto& [k, x] : *ns.dict)
        if (k == attr) {
          x = v;
          return;
        }
      ns.dict->emplace_back(attr, v);
      return;
    }
    assign(n.names, v, scopes_.back(), n.line);
  }

  static Value loop_object(const List& items, size_t k) {
    const auto len = static_cast<int64_t>(items.size()), idx = static_cast<int64_t>(k);
    Dict d{{"index", Value::integer(idx + 1)},          {"index0", Value::integer(idx)},
           {"revindex", Value::integer(len - idx)},     {"revindex0", Value::integer(len - idx - 1)},
           {"first", Value::boolean(k == 0)},           {"last", Value::boolean(idx == len - 1)},
           {"length", Value::integer(len)}};
    if (k > 0) d.emplace_back("previtem", items[k - 1]);
    if (idx + 1 < len) d.emplace_back("nextitem", items[k + 1]);
    return Value::make_dict(std::move(d));
  }

  void exec_for(const Node& n, std::string& out) {
    List all = iterate(eval(*n.exprs[0]), n.line), items;
    for (const Value& x : all) {
      if (!n.exprs[1]) {
        items.push_back(x);
        continue;
      }
      scopes_.emplace_back();
      assign(n.names, x, scopes_.back(), n.line);
      const bool keep = truthy(eval(*n.exprs[1]));
      scopes_.pop_back();
      if (keep) items.push_back(x);
    }
    for (size_t k = 0; k < items.size(); ++k) {
      scopes_.emplace_back();
      assign(n.names, items[k], scopes_.back(), n.line);
      scopes_.back()["loop"] = loop_object(items, k);
      const Flow f = exec(n.bodies[0], out);
      scopes_.pop_back();
      if (f == Flow::Break) break;
    }
    if (items.empty()) exec(n.bodies[1], out);
  }

  Value macro(const Node& n) {
    const Node* node = &n;
    return Value::function([this, node](const List& args, const Kwargs& kwargs) {
      if (args.size() > node->names.size())
        error(node->line, "macro '" + node->text + "' takes " + std::to_string(node->names.size()) + " arguments");
      std::vector<Scope> saved(scopes_.begin(), scopes_.begin() + 2);
      std::swap(saved, scopes_);
      scopes_.emplace_back();
      for (size_t k = 0; k < node->names.size(); ++k) {
        Value v = k < args.size() ? args[k] : Value::undefined(node->names[k]);
        for (const auto& [name, x] : kwargs)
          if (name == node->names[k]) v = x;
        if (v.is(Value::Kind::Undefined) && node->exprs[k]) v = eval(*node->exprs[k]);
        scopes_.back()[node->names[k]] = v;
      }
      std::string text;
      exec(node->bodies[0], text);
      std::swap(saved, scopes_);
      return Value::string(text);
    });
  }

  List iterate(const Value& v, int line) const {
    switch (v.kind) {
      case Value::Kind::Undefined: return {};
      case Value::Kind::List: case Value::Kind::Tuple: return *v.list;
      case Value::Kind::Dict: {
        List keys;
        for (const auto& kv : *v.dict) keys.push_back(Value::string(kv.first));
        return keys;
      }
      case Value::Kind::String: {
        List chars;
        for (char32_t c : utf32(v.s)) chars.push_back(Value::string(utf8(std::u32string(1, c))));
        return chars;
      }
      default: error(line, "'" + type_name(v) + "' object is not iterable");
    }
  }

  Value eval(const Expr& e) {
    try {
      return eval_expr(e);
    } catch (const TemplateError&) {
      throw;
    } catch (const std::exception& ex) {
      error(e.line, ex.what());
    }
  }

  Value eval_expr(const Expr& e);
  Value attribute(const Value& obj, const std::string& name, const Expr& e);
  Value item(const Value& obj, const Value& key, const Expr& e);
  Value slice(const Expr& e);
  Value call(const Expr& e);
  Value binary(const Expr& e);
  Value arith(const std::string& op, const Value& a, const Value& b, int line);
  void arguments(const std::vector<Arg>& in, List& args, Kwargs& kwargs);

  const Program& p_;
  const std::optional<std::tm>& now_;
  std::vector<Scope> scopes_;
};

Value Interp::eval_expr(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Literal: return e.literal;
    case Expr::Kind::Name: return lookup(e.name);
    case Expr::Kind::Attr: return attribute(eval(*e.kids[0]), e.name, e);
    case Expr::Kind::Item: return item(eval(*e.kids[0]), eval(*e.kids[1]), e);
    case Expr::Kind::Slice: return slice(e);
    case Expr::Kind::Call: return call(e);
    case Expr::Kind::Filter: {
      List args{eval(*e.kids[0])};
      Kwargs kwargs;
      arguments(e.args, args, kwargs);
      return call_filter(e.name, args, kwargs);
    }
    case Expr::Kind::Test: {
      List args{eval(*e.kids[0])};
      Kwargs kwargs;
      arguments(e.args, args, kwargs);
      return Value::boolean(call_test(e.name, args) != e.negated);
    }
    case Expr::Kind::Unary: {
      const Value v = eval(*e.kids[0]);
      if (e.name == "not") return Value::boolean(!truthy(v));
      if (v.is(Value::Kind::Int)) return Value::integer(e.name == "-" ? -v.i : v.i);
      if (v.is(Value::Kind::Float)) return Value::real(e.name == "-" ? -v.f : v.f);
      error(e.line, "bad operand type for unary " + e.name + ": '" + type_name(v) + "'");
    }
    case Expr::Kind::Binary: return binary(e);
    case Expr::Kind::Cond:
      if (truthy(eval(*e.kids[1]))) return eval(*e.kids[0]);
      return e.kids[2] ? eval(*e.kids[2]) : Value::undefined("");
    case Expr::Kind::List: case Expr::Kind::Tuple: {
      List items;
      for (const auto& k : e.kids) items.push_back(eval(*k));
      return Value::make_list(std::move(items), e.kind == Expr::Kind::Tuple);
    }
    case Expr::Kind::Dict: {
      Dict items;
      for (size_t k = 0; k + 1 < e.kids.size(); k += 2) {
        const Value key = eval(*e.kids[k]);
        if (!key.is(Value::Kind::String)) error(e.line, "dict keys other than strings are not supported");
        items.emplace_back(key.s, eval(*e.kids[k + 1]));
      }
      return Value::make_dict(std::move(items));
    }
  }
  error(e.line, "unknown expression");
}

std::string undefined_message(const Value& v) {
  return v.s.empty() ? "a value is undefined" : "'" + v.s + "' is undefined";
}

Value Interp::attribute(const Value& obj, const std::string& name, const Expr& e) {
  if (obj.is(Value::Kind::Undefined)) error(e.line, undefined_message(obj));
  if (const Value* v = obj.find(name)) return *v;
  if (obj.is_mapping())
    return Value::undefined("'" + std::string(obj.is(Value::Kind::Dict) ? "dict object" : "Namespace") +
                            "' has no attribute '" + name + "'");
  return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + name + "'");
}

Value Interp::item(const Value& obj, const Value& key, const Expr& e) {
  if (obj.is(Value::Kind::Undefined)) error(e.line, undefined_message(obj));
  if (obj.is_mapping()) {
    if (key.is(Value::Kind::String))
      if (const Value* v = obj.find(key.s)) return *v;
    return Value::undefined("'dict object' has no attribute '" + to_str(key) + "'");
  }
  if ((obj.is_sequence() || obj.is(Value::Kind::String)) && key.is(Value::Kind::Int)) {
    const std::u32string u = obj.is(Value::Kind::String) ? utf32(obj.s) : std::u32string();
    const auto n = static_cast<int64_t>(obj.is(Value::Kind::String) ? u.size() : obj.list->size());
    const int64_t k = key.i < 0 ? key.i + n : key.i;
    if (k < 0 || k >= n) return Value::undefined(type_name(obj) + " index out of range");
    if (obj.is(Value::Kind::String)) return Value::string(utf8(u.substr(static_cast<size_t>(k), 1)));
    return (*obj.list)[static_cast<size_t>(k)];
  }
  return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + to_str(key) + "'");
}

// Python's slice semantics (negative bounds count from the end, a negative step walks back).
Value Interp::slice(const Expr& e) {
  const Value obj = eval(*e.kids[0]);
  if (!obj.is_sequence() && !obj.is(Value::Kind::String)) error(e.line, "'" + type_name(obj) + "' cannot be sliced");
  auto bound = [&](size_t k) -> std::optional<int64_t> {
    if (!e.kids[k]) return std::nullopt;
    const Value v = eval(*e.kids[k]);
    if (v.is(Value::Kind::None)) return std::nullopt;
    if (!v.is(Value::Kind::Int)) error(e.line, "slice indices must be integers or None");
    return v.i;
  };
  const std::optional<int64_t> start = bound(1), stop = bound(2), step_v = bound(3);
  const int64_t step = step_v.value_or(1);
  if (step == 0) error(e.line, "slice step cannot be zero");
  const std::u32string u = obj.is(Value::Kind::String) ? utf32(obj.s) : std::u32string();
  const auto n = static_cast<int64_t>(obj.is(Value::Kind::String) ? u.size() : obj.list->size());
  auto clamp = [&](std::optional<int64_t> b, int64_t dflt) {
    if (!b) return dflt;
    int64_t x = *b < 0 ? *b + n : *b;
    if (step > 0) return std::min(std::max(x, int64_t{0}), n);
    return std::min(std::max(x, int64_t{-1}), n - 1);
  };
  const int64_t from = clamp(start, step > 0 ? 0 : n - 1), to = clamp(stop, step > 0 ? n : -1);
  std::u32string s;
  List items;
  for (int64_t k = from; step > 0 ? k < to : k > to; k += step) {
    if (obj.is(Value::Kind::String)) s += u[static_cast<size_t>(k)];
    else items.push_back((*obj.list)[static_cast<size_t>(k)]);
  }
  if (obj.is(Value::Kind::String)) return Value::string(utf8(s));
  return Value::make_list(std::move(items), obj.is(Value::Kind::Tuple));
}

void Interp::arguments(const std::vector<Arg>& in, List& args, Kwargs& kwargs) {
  for (const Arg& a : in) {
    if (a.name.empty()) args.push_back(eval(*a.value));
    else kwargs.emplace_back(a.name, eval(*a.value));
  }
}

Value Interp::call(const Expr& e) {
  const Expr& callee = *e.kids[0];
  List args;
  Kwargs kwargs;
  if (callee.kind == Expr::Kind::Attr) {
    const Value obj = eval(*callee.kids[0]);
    const Value* member = obj.find(callee.name);
    if (!(member && member->is(Value::Kind::Function)) &&
        (obj.is(Value::Kind::String) || obj.is_sequence() || obj.is(Value::Kind::Dict))) {
      arguments(e.args, args, kwargs);
      return call_method(obj, callee.name, args, kwargs);
    }
  }
  const Value f = eval(callee);
  if (f.is(Value::Kind::Undefined)) error(e.line, undefined_message(f));
  if (!f.is(Value::Kind::Function)) error(e.line, "'" + type_name(f) + "' object is not callable");
  arguments(e.args, args, kwargs);
  return (*f.fn)(args, kwargs);
}

Value Interp::binary(const Expr& e) {
  const std::string& op = e.name;
  const Value a = eval(*e.kids[0]);
  if (op == "and") return truthy(a) ? eval(*e.kids[1]) : a;
  if (op == "or") return truthy(a) ? a : eval(*e.kids[1]);
  const Value b = eval(*e.kids[1]);
  if (op == "==") return Value::boolean(equal(a, b));
  if (op == "!=") return Value::boolean(!equal(a, b));
  if (op == "in" || op == "not in") return Value::boolean(contains(b, a) == (op == "in"));
  if (op == "~") return Value::string(to_str(a) + to_str(b));
  if (op == "<" || op == ">" || op == "<=" || op == ">=") {
    const int c = compare(a, b);
    return Value::boolean(op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0);
  }
  return arith(op, a, b, e.line);
}

Value Interp::arith(const std::string& op, const Value& a, const Value& b, int line) {
  const auto bad = [&]() -> Value {
    error(line, "unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
  };
  if (a.is(Value::Kind::Undefined) || b.is(Value::Kind::Undefined))
    error(line, undefined_message(a.is(Value::Kind::Undefined) ? a : b));
  if (op == "+" && a.is(Value::Kind::String) && b.is(Value::Kind::String)) return Value::string(a.s + b.s);
  if (op == "+" && a.is(Value::Kind::List) && b.is(Value::Kind::List)) {
    List items = *a.list;
    items.insert(items.end(), b.list->begin(), b.list->end());
    return Value::make_list(std::move(items));
  }
  if (op == "*" && (a.is(Value::Kind::String) || a.is(Value::Kind::List)) && b.is(Value::Kind::Int)) {
    if (a.is(Value::Kind::String)) {
      std::string s;
      for (int64_t k = 0; k < b.i; ++k) s += a.s;
      return Value::string(s);
    }
    List items;
    for (int64_t k = 0; k < b.i; ++k) items.insert(items.end(), a.list->begin(), a.list->end());
    return Value::make_list(std::move(items));
  }
  const bool an = a.is_number() || a.is(Value::Kind::Bool), bn = b.is_number() || b.is(Value::Kind::Bool);
  if (!an || !bn) return bad();
  const auto as_int = [](const Value& v) { return v.is(Value::Kind::Bool) ? int64_t{v.b} : v.i; };
  if (op == "/" || a.is(Value::Kind::Float) || b.is(Value::Kind::Float)) {
    const double x = a.is(Value::Kind::Float) ? a.f : static_cast<double>(as_int(a));
    const double y = b.is(Value::Kind::Float) ? b.f : static_cast<double>(as_int(b));
    if ((op == "/" || op == "//" || op == "%") && y == 0) error(line, "division by zero");
    if (op == "+") return Value::real(x + y);
    if (op == "-") return Value::real(x - y);
    if (op == "*") return Value::real(x * y);
    if (op == "/") return Value::real(x / y);
    if (op == "//") return Value::real(std::floor(x / y));
    if (op == "%") return Value::real(x - std::floor(x / y) * y);
    if (op == "**") return Value::real(std::pow(x, y));
    return bad();
  }
  const int64_t x = as_int(a), y = as_int(b);
  if ((op == "//" || op == "%") && y == 0) error(line, "integer division or modulo by zero");
  if (op == "+") return Value::integer(x + y);
  if (op == "-") return Value::integer(x - y);
  if (op == "*") return Value::integer(x * y);
  if (op == "//") return Value::integer(x / y - ((x % y != 0) && ((x < 0) != (y < 0))));
  if (op == "%") return Value::integer(((x % y) + y) % y);
  if (op == "**") return y >= 0 ? Value::integer(static_cast<int64_t>(std::pow(x, y))) : Value::real(std::pow(x, y));
  return bad();
}

}  // namespace

ChatJinja::ChatJinja(std::string source, std::string origin)
    : origin_(std::move(origin)), program_(parse(source, origin_)) {}

std::string ChatJinja::render(const nlohmann::ordered_json& context) const {
  if (!context.is_object()) throw TemplateError(origin_ + ": the render context must be a JSON object");
  Interp interp(*program_, now_);
  return interp.run(context);
}

std::string apply_chat_template(const ChatJinja& tmpl, const nlohmann::ordered_json& messages,
                                bool add_generation_prompt, const nlohmann::ordered_json& tools,
                                const nlohmann::ordered_json& extra) {
  using nlohmann::ordered_json;
  ordered_json chat = ordered_json::array();
  for (const auto& m : messages) {
    const ordered_json* reasoning = nullptr;
    for (const char* key : {"reasoning_content", "thinking", "reasoning"})
      if (!reasoning && m.is_object() && m.contains(key) && !m[key].is_null()) reasoning = &m[key];
    if (!reasoning) {
      chat.push_back(m);
      continue;
    }
    ordered_json aliased = ordered_json::object();  // {"thinking": r, **message, "reasoning_content": r}
    aliased["thinking"] = *reasoning;
    for (auto it = m.begin(); it != m.end(); ++it) aliased[it.key()] = it.value();
    aliased["reasoning_content"] = *reasoning;
    chat.push_back(aliased);
  }
  ordered_json ctx = extra.is_object() ? extra : ordered_json::object();
  ctx["messages"] = chat;
  ctx["tools"] = tools;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = add_generation_prompt;
  return tmpl.render(ctx);
}

}  // namespace gspo::tokenizer::jinja
