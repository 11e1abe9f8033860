// Runtime values of the Jinja interpreter with Python's semantics: truth, equality, str(), repr(), json.dumps.
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "gspo/tokenizer/chat_tools.h"
#include "gspo/tokenizer/jinja_detail.h"

namespace gspo::tokenizer::jinja {

Value Value::undefined(std::string name) {
  Value v;
  v.s = std::move(name);
  return v;
}
Value Value::none() {
  Value v;
  v.kind = Kind::None;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind = Kind::Bool;
  v.b = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind = Kind::Int;
  v.i = i;
  return v;
}
Value Value::real(double f) {
  Value v;
  v.kind = Kind::Float;
  v.f = f;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.kind = Kind::String;
  v.s = std::move(s);
  return v;
}
Value Value::make_list(List items, bool tuple) {
  Value v;
  v.kind = tuple ? Kind::Tuple : Kind::List;
  v.list = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::make_dict(Dict items, bool is_namespace) {
  Value v;
  v.kind = is_namespace ? Kind::Namespace : Kind::Dict;
  v.dict = std::make_shared<Dict>(std::move(items));
  return v;
}
Value Value::function(Function f) {
  Value v;
  v.kind = Kind::Function;
  v.fn = std::make_shared<Function>(std::move(f));
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::null: return none();
    case T::boolean: return boolean(j.get<bool>());
    case T::number_integer: return integer(j.get<int64_t>());
    case T::number_unsigned: return integer(static_cast<int64_t>(j.get<uint64_t>()));
    case T::number_float: return real(j.get<double>());
    case T::string: return string(j.get<std::string>());
    case T::array: {
      List items;
      for (const auto& x : j) items.push_back(from_json(x));
      return make_list(std::move(items));
    }
    case T::object: {
      Dict items;
      for (auto it = j.begin(); it != j.end(); ++it) items.emplace_back(it.key(), from_json(it.value()));
      return make_dict(std::move(items));
    }
    default: throw std::runtime_error("a JSON value of an unsupported type (binary or discarded)");
  }
}

const Value* Value::find(const std::string& key) const {
  if (!is_mapping()) return nullptr;
  for (const auto& [k, v] : *dict)
    if (k == key) return &v;
  return nullptr;
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.b;
    case Value::Kind::Int: return v.i != 0;
    case Value::Kind::Float: return v.f != 0;
    case Value::Kind::String: return !v.s.empty();
    case Value::Kind::List: case Value::Kind::Tuple: return !v.list->empty();
    case Value::Kind::Dict: return !v.dict->empty();
    default: return true;
  }
}

bool equal(const Value& a, const Value& b) {
  if ((a.is_number() || a.is(Value::Kind::Bool)) && (b.is_number() || b.is(Value::Kind::Bool))) {
    auto as_int = [](const Value& v) { return v.is(Value::Kind::Bool) ? int64_t{v.b} : v.i; };
    if (a.is(Value::Kind::Float) || b.is(Value::Kind::Float)) {
      auto as_double = [&](const Value& v) { return v.is(Value::Kind::Float) ? v.f : static_cast<double>(as_int(v)); };
      return as_double(a) == as_double(b);
    }
    return as_int(a) == as_int(b);
  }
  if (a.is_sequence() && b.is_sequence()) {
    if (a.kind != b.kind || a.list->size() != b.list->size()) return false;
    for (size_t k = 0; k < a.list->size(); ++k)
      if (!equal((*a.list)[k], (*b.list)[k])) return false;
    return true;
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::Undefined: case Value::Kind::None: return true;
    case Value::Kind::String: return a.s == b.s;
    case Value::Kind::Dict: {
      if (a.dict->size() != b.dict->size()) return false;
      for (const auto& [k, v] : *a.dict) {
        const Value* o = b.find(k);
        if (!o || !equal(v, *o)) return false;
      }
      return true;
    }
    default: return a.dict == b.dict && a.fn == b.fn;
  }
}

// Python's repr of a float (chat_tools.h, shared with the tool schemas' JSON).
std::string python_float(double d) { return python_float_repr(d); }

namespace {

// Python's repr of a str: single quotes unless the text holds ' and no ", with \\, \n, \r, \t and other control
// characters escaped; non-ASCII text is printable and kept.
std::string repr_string(const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == static_cast<unsigned char>(q)) out += std::string("\\") + q;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + q;
}

void json_string(const std::string& s, std::string& out) {
  out += nlohmann::ordered_json(s).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void json_dump(const Value& v, int indent, int depth, std::string& out) {
  const std::string nl = indent < 0 ? "" : "\n" + std::string(static_cast<size_t>(indent * (depth + 1)), ' ');
  const std::string nl_end = indent < 0 ? "" : "\n" + std::string(static_cast<size_t>(indent * depth), ' ');
  const char* sep = indent < 0 ? ", " : ",";
  switch (v.kind) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.b ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.i); return;
    case Value::Kind::Float:
      out += std::isnan(v.f) ? "NaN" : std::isinf(v.f) ? (v.f < 0 ? "-Infinity" : "Infinity") : python_float(v.f);
      return;
    case Value::Kind::String: json_string(v.s, out); return;
    case Value::Kind::List: case Value::Kind::Tuple:
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += "[";
      for (size_t k = 0; k < v.list->size(); ++k) {
        out += (k ? sep : "") + nl;
        json_dump((*v.list)[k], indent, depth + 1, out);
      }
      out += nl_end + "]";
      return;
    case Value::Kind::Dict: case Value::Kind::Namespace:
      if (v.dict->empty()) {
        out += "{}";
        return;
      }
      out += "{";
      for (size_t k = 0; k < v.dict->size(); ++k) {
        out += (k ? sep : "") + nl;
        json_string((*v.dict)[k].first, out);
        out += ": ";
        json_dump((*v.dict)[k].second, indent, depth + 1, out);
      }
      out += nl_end + "}";
      return;
    default: throw std::runtime_error("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string type_name(const Value& v) {
  static const char* const names[] = {"Undefined", "NoneType", "bool",  "int",       "float",   "str",
                                      "list",      "tuple",    "dict",  "Namespace", "function"};
  return names[static_cast<int>(v.kind)];
}

std::string repr(const Value& v) {
  if (v.is(Value::Kind::String)) return repr_string(v.s);
  return to_str(v);
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.b ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.i);
    case Value::Kind::Float: return python_float(v.f);
    case Value::Kind::String: return v.s;
    case Value::Kind::List: case Value::Kind::Tuple: {
      const bool tuple = v.is(Value::Kind::Tuple);
      std::string out = tuple ? "(" : "[";
      for (size_t k = 0; k < v.list->size(); ++k) out += (k ? ", " : "") + repr((*v.list)[k]);
      if (tuple && v.list->size() == 1) out += ",";
      return out + (tuple ? ")" : "]");
    }
    case Value::Kind::Dict: {
      std::string out = "{";
      for (size_t k = 0; k < v.dict->size(); ++k)
        out += (k ? ", " : "") + repr_string((*v.dict)[k].first) + ": " + repr((*v.dict)[k].second);
      return out + "}";
    }
    case Value::Kind::Namespace: return "<Namespace>";
    default: return "<function>";
  }
}

std::string to_json(const Value& v, int indent) {
  std::string out;
  json_dump(v, indent, 0, out);
  return out;
}

std::u32string utf32(const std::string& s) {
  std::u32string out;
  for (size_t k = 0; k < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[k]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
    for (int m = 1; m < n && k + m < s.size(); ++m) cp = (cp << 6) | (static_cast<unsigned char>(s[k + m]) & 0x3f);
    out += cp;
    k += static_cast<size_t>(n);
  }
  return out;
}

std::string utf8(const std::u32string& s) {
  std::string out;
  for (char32_t cp : s) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }
  return out;
}

// Case mapping of ASCII and Latin-1 letters (U+00C0-U+00DE <-> U+00E0-U+00FE, not x/÷); other text is kept.
std::string upper(const std::string& s) {
  std::u32string u = utf32(s);
  for (char32_t& c : u)
    if ((c >= 'a' && c <= 'z') || (c >= 0xe0 && c <= 0xfe && c != 0xf7)) c -= 32;
  return utf8(u);
}

std::string lower(const std::string& s) {
  std::u32string u = utf32(s);
  for (char32_t& c : u)
    if ((c >= 'A' && c <= 'Z') || (c >= 0xc0 && c <= 0xde && c != 0xd7)) c += 32;
  return utf8(u);
}

}  // namespace gspo::tokenizer::jinja
