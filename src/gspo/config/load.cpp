#include "gspo/config/load.h"

#include <sys/stat.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <type_traits>

#include "gspo/config/suggest.h"
#include "gspo/config/validate.h"
#include "gspo/config/value_text.h"
#include "gspo/core/error.h"
#include "gspo/core/parse.h"

namespace gspo::config {
namespace {

// Where a value came from: "file.yaml:LINE" or "--set".
std::string where_of(const YAML::Node& n, const std::string& origin, bool from_file) {
  if (!from_file) return origin;
  return origin + ":" + std::to_string(n.Mark().line + 1);
}

// Where `key` of mapping `map` is written: the key's own line. (The node of an empty value, `key:` and nothing after
// it, is marked where the next token begins: a line late.)
std::string where_of_key(const YAML::Node& map, const char* key, const std::string& origin, bool from_file) {
  if (from_file && map.IsMap())
    for (const auto& kv : map)
      if (kv.first.IsScalar() && kv.first.Scalar() == key) return where_of(kv.first, origin, from_file);
  return where_of(map[key], origin, from_file);
}

// Converts one YAML node into a typed field; returns false with `expected` set when the type is wrong.
bool convert(const YAML::Node& n, int64_t& out, std::string& expected) {
  expected = "an integer";
  if (!n.IsScalar()) return false;
  auto v = parse_int(n.Scalar());
  if (v) out = *v;
  return v.has_value();
}
bool convert(const YAML::Node& n, double& out, std::string& expected) {
  expected = "a number";
  if (!n.IsScalar()) return false;
  try {
    const std::string& s = n.Scalar();
    size_t pos = 0;
    double v = std::stod(s, &pos);
    if (pos != s.size() || !std::isfinite(v)) return false;
    out = v;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}
bool convert(const YAML::Node& n, bool& out, std::string& expected) {
  expected = "true or false";
  if (!n.IsScalar()) return false;
  const std::string& s = n.Scalar();
  if (s == "true" || s == "True" || s == "TRUE") { out = true; return true; }
  if (s == "false" || s == "False" || s == "FALSE") { out = false; return true; }
  return false;
}
bool convert(const YAML::Node& n, std::string& out, std::string& expected) {
  expected = "a string";
  if (n.IsNull()) { out.clear(); return true; }
  if (!n.IsScalar()) return false;
  out = n.Scalar();
  return true;
}
bool convert(const YAML::Node& n, std::vector<std::string>& out, std::string& expected) {
  expected = "a list of strings";
  if (n.IsNull()) { out.clear(); return true; }
  if (!n.IsSequence()) return false;
  std::vector<std::string> v;
  for (const auto& item : n) {
    if (!item.IsScalar()) return false;
    v.push_back(item.Scalar());
  }
  out = std::move(v);
  return true;
}

// A YAML value as JSON: quoted scalars are strings; plain ones null, booleans, integers or numbers when they read as
// one (YAML 1.2's core schema), else strings. False beyond kMaxJsonDepth levels of nesting.
constexpr int kMaxJsonDepth = 64;
bool to_json(const YAML::Node& n, nlohmann::ordered_json& out, int depth = 0) {
  if (depth > kMaxJsonDepth) return false;
  if (n.IsMap()) {
    out = nlohmann::ordered_json::object();
    for (const auto& kv : n) {
      if (!kv.first.IsScalar() || !to_json(kv.second, out[kv.first.Scalar()], depth + 1)) return false;
    }
    return true;
  }
  if (n.IsSequence()) {
    out = nlohmann::ordered_json::array();
    for (const auto& item : n) {
      nlohmann::ordered_json v;
      if (!to_json(item, v, depth + 1)) return false;
      out.push_back(std::move(v));
    }
    return true;
  }
  if (n.IsNull()) { out = nullptr; return true; }
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") { out = s; return true; }
  bool b = false;
  std::string ignored;
  if (convert(n, b, ignored)) { out = b; return true; }
  if (auto i = parse_int(s)) { out = *i; return true; }
  double d = 0;
  if (convert(n, d, ignored)) { out = d; return true; }
  out = s;
  return true;
}
bool convert(const YAML::Node& n, JsonObject& out, std::string& expected) {
  expected = "a mapping (a JSON object)";
  if (n.IsNull()) { out.json = "{}"; return true; }
  nlohmann::ordered_json j;
  if (!n.IsMap() || !to_json(n, j)) return false;
  out.json = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  return true;
}

std::string shown(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + clip_for_message(n.Scalar()) + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

// Checks a typed value against its rule; returns "" or the failed rule's description.
template <class T>
std::string check_rule(const T& v, const Rule& r) {
  if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
    return check_number(r, static_cast<double>(v));
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (r.choices.empty()) return "";
    for (const auto& c : r.choices) if (c == v) return "";
    return describe(r);
  } else {
    return "";
  }
}

struct KeyLister {
  std::vector<std::string>& keys;
  template <class T>
  void operator()(const char* key, T&, const char*, const Rule&) { keys.push_back(key); }
};

template <class T> struct IsList : std::false_type {};
template <class T> struct IsList<std::vector<T>> : std::true_type {};

void check_duplicates(const YAML::Node& map, const std::string& prefix, const std::string& origin, bool from_file,
                      std::vector<std::string>& errors);

// Errors for the keys of mapping `node` that `table` (a section or a record) does not have, each with the nearest
// valid key when there is one. `path` is the mapping's own ("reward", "tools.list[1]").
template <class Table>
void check_unknown_keys(const YAML::Node& node, Table& table, const std::string& path, const std::string& origin,
                        bool from_file, std::vector<std::string>& errors) {
  std::vector<std::string> keys;
  table.visit(KeyLister{keys});
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    std::string msg = where_of(kv.first, origin, from_file) + ": unknown key '" + path + "." + key + "'";
    std::string near = nearest(key, keys);
    if (near.empty()) {
      // Maybe the key lives in another section.
      for (const auto& full : all_keys())
        if (full.substr(full.find('.') + 1) == key) near = full;
      if (!near.empty()) msg += "; did you mean '" + near + "'?";
    } else {
      msg += "; did you mean '" + path + "." + near + "'?";
    }
    errors.push_back(msg);
  }
}

// Visits one section's fields, applying the keys present in `node`.
struct SectionReader {
  const YAML::Node& node;
  const std::string& section;
  const std::string& origin;
  bool from_file;
  Config& cfg;
  std::vector<std::string>& errors;

  template <class T>
  void operator()(const char* key, T& field, const char* /*doc*/, const Rule& rule) {
    if constexpr (IsChoice<T>::value) {
      // Read as its name, checked against the names, then parsed: the messages are a string option's.
      std::string name = name_of(field);
      const size_t errors_before = errors.size();
      if (!read(key, name, rule)) return;
      if (const auto parsed = parse_choice<T>(name)) {
        field = *parsed;
      } else if (errors.size() == errors_before) {  // a table row whose rule does not list the names
        std::string names;
        for (const auto& c : choices(field)) names += (names.empty() ? "" : ", ") + std::string(c.name);
        errors.push_back(where_of_key(node, key, origin, from_file) + ": " + section + "." + key + " must be one of " +
                         names + " (got " + value_preview(name) + ")");
      }
    } else if constexpr (IsRecordList<T>::value) {
      if (YAML::Node n = node[key])
        read_records(n, section + "." + key, where_of_key(node, key, origin, from_file), field);
    } else {
      read(key, field, rule);
    }
  }

  // Applies node[key] to `field` when present and valid; true when it was applied.
  template <class T>
  bool read(const char* key, T& field, const Rule& rule) {
    YAML::Node n = node[key];
    if (!n) return false;
    const std::string path = section + "." + key;
    const std::string where = where_of_key(node, key, origin, from_file);
    T value = field;
    std::string expected;
    if (!convert(n, value, expected)) {
      errors.push_back(where + ": " + path + " must be " + expected + " (got " + shown(n) + ")");
      return false;
    }
    std::string broken = check_rule(value, rule);
    if (!broken.empty()) {
      std::string msg = where + ": " + path + " must be " + broken + " (got " + value_preview(value) + ")";
      if constexpr (std::is_same_v<T, std::string>) {
        std::string near = nearest(value, rule.choices);
        if (!near.empty()) msg += "; did you mean '" + near + "'?";
      }
      errors.push_back(msg);
      return false;
    }
    field = value;
    cfg.origin[path] = where;
    return true;
  }

  // A list of records (tools.list): each item a mapping read by the record's own table under the path
  // "section.key[i]", so every message names the item and its key. The list is applied only when all items read.
  template <class R>
  bool read_records(const YAML::Node& n, const std::string& path, const std::string& where, std::vector<R>& field) {
    if (n.IsNull()) {
      field.clear();
      cfg.origin[path] = where;
      return true;
    }
    if (!n.IsSequence()) {
      errors.push_back(where + ": " + path + " must be a list of mappings (got " + shown(n) + ")");
      return false;
    }
    const size_t errors_before = errors.size();
    std::vector<R> items;
    for (size_t i = 0; i < n.size(); ++i) {
      const YAML::Node item = n[i];
      const std::string item_path = path + "[" + std::to_string(i) + "]";
      R record;
      if constexpr (HasShorthand<R>::value) {
        if (item.IsScalar()) {  // the shorthand: the path alone
          record.set_shorthand(item.Scalar());
          cfg.origin[item_path] = where_of(item, origin, from_file);
          items.push_back(std::move(record));
          continue;
        }
      }
      if (!item.IsMap()) {
        errors.push_back(where_of(item, origin, from_file) + ": " + item_path + " must be a mapping of keys (got " +
                         shown(item) + ")");
        continue;
      }
      cfg.origin[item_path] = where_of(item, origin, from_file);  // what a rule on a key the item lacks names
      check_duplicates(item, item_path + ".", origin, from_file, errors);
      check_unknown_keys(item, record, item_path, origin, from_file, errors);
      record.visit(SectionReader{item, item_path, origin, from_file, cfg, errors});
      items.push_back(std::move(record));
    }
    if (errors.size() != errors_before) return false;
    field = std::move(items);
    cfg.origin[path] = where;
    return true;
  }
};


// Whether section.key holds a list (the one kind of --set value read as YAML).
struct ListFinder {
  const std::string& key;
  bool& is_list;
  template <class T>
  void operator()(const char* k, T&, const char*, const Rule&) {
    if (key == k) is_list = is_list || IsList<T>::value;
  }
};

bool is_list_field(const std::string& section, const std::string& key) {
  bool is_list = false;
  Config c;
  c.visit_sections([&](const char* name, auto& s, const char*) {
    if (section == name) s.visit(ListFinder{key, is_list});
  });
  return is_list;
}

std::vector<std::string> section_names() {
  std::vector<std::string> names;
  Config c;
  c.visit_sections([&](const char* name, auto&, const char*) { names.push_back(name); });
  return names;
}

// Applies one top-level mapping {section: {key: value}} to cfg, collecting errors.
// yaml-cpp keeps a repeated key and reads the first silently: each repeat is an error naming both lines.
void check_duplicates(const YAML::Node& map, const std::string& prefix, const std::string& origin, bool from_file,
                      std::vector<std::string>& errors) {
  std::map<std::string, std::string> first;
  for (const auto& kv : map) {
    const std::string key = prefix + kv.first.Scalar();
    const std::string where = where_of(kv.first, origin, from_file);
    auto [it, fresh] = first.emplace(key, where);
    if (!fresh) errors.push_back(where + ": duplicate key '" + key + "' (first set at " + it->second + ")");
    if (prefix.empty() && kv.second.IsMap()) check_duplicates(kv.second, key + ".", origin, from_file, errors);
  }
}

void apply_document(const YAML::Node& root, const std::string& origin, bool from_file, Config& cfg,
                    std::vector<std::string>& errors) {
  const auto sections = section_names();
  if (root.IsMap()) check_duplicates(root, "", origin, from_file, errors);
  for (const auto& kv : root) {
    const std::string name = kv.first.Scalar();
    if (std::find(sections.begin(), sections.end(), name) == sections.end()) {
      std::string msg = where_of(kv.first, origin, from_file) + ": unknown section '" + name + "'";
      std::string near = nearest(name, sections);
      if (near.empty()) {
        msg += " (sections:";
        for (const auto& s : sections) msg += " " + s;
        msg += ")";
      } else {
        msg += "; did you mean '" + near + "'?";
      }
      errors.push_back(msg);
    }
  }
  cfg.visit_sections([&](const char* name, auto& section, const char*) {
    YAML::Node node = root[name];
    if (!node || node.IsNull()) return;
    if (!node.IsMap()) {
      errors.push_back(where_of(node, origin, from_file) + ": section '" + name + "' must be a mapping of keys");
      return;
    }
    check_unknown_keys(node, section, name, origin, from_file, errors);
    const std::string section_name = name;
    section.visit(SectionReader{node, section_name, origin, from_file, cfg, errors});
  });
}

// `raw` as a YAML flow sequence when the whole of it is one ("[a, b]"); nothing for any other text ("[INST] {prompt}
// [/INST]", which yaml-cpp would read as its first bracket's list: the bracket opening it must close at its end).
std::optional<YAML::Node> flow_sequence(const std::string& raw) {
  const auto first = raw.find_first_not_of(" \t"), last = raw.find_last_not_of(" \t");
  if (first == std::string::npos || raw[first] != '[' || raw[last] != ']') return std::nullopt;
  int depth = 0;
  for (size_t i = first; i < last; ++i) {
    depth += raw[i] == '[' ? 1 : raw[i] == ']' ? -1 : 0;
    if (depth == 0) return std::nullopt;  // closed before the end
  }
  try {
    YAML::Node n = YAML::Load(raw);
    if (n.IsSequence()) return n;
  } catch (const YAML::Exception&) {
  }
  return std::nullopt;
}

void apply_override(const std::string& text, Config& cfg, std::vector<std::string>& errors) {
  const auto eq = text.find('=');
  const std::string origin = "--set " + clip_for_message(text);
  if (eq == std::string::npos) {
    errors.push_back(origin + ": expected section.key=value");
    return;
  }
  const std::string path = text.substr(0, eq);
  const auto dot = path.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == path.size()) {
    errors.push_back(origin + ": expected section.key=value (got key '" + path + "')");
    return;
  }
  // Scalars are taken literally ("Q: {prompt} A=", "You are #1"); only lists are YAML flow sequences. A whole value
  // that is one (data.path=[a,b]) on a key that takes no list is passed on as the list: refused as a YAML file's is.
  const std::string raw = text.substr(eq + 1);
  YAML::Node value(raw);
  if (!is_list_field(path.substr(0, dot), path.substr(dot + 1))) {
    if (auto list = flow_sequence(raw)) value = *list;
  } else {
    try {
      value = YAML::Load(raw);
    } catch (const YAML::Exception& e) {
      errors.push_back(origin + ": a list is written as [a, b, \"c d\"] (YAML flow sequence): " + e.msg);
      return;
    }
    if (!value.IsSequence() && !value.IsNull()) {
      errors.push_back(origin + ": " + path + " is a list; write it as [" + raw + "] (YAML flow sequence)");
      return;
    }
  }
  YAML::Node doc;
  doc[path.substr(0, dot)][path.substr(dot + 1)] = value;
  apply_document(doc, origin, false, cfg, errors);
}

void throw_if(const std::vector<std::string>& errors) {
  if (errors.empty()) return;
  std::string msg = errors.size() == 1 ? "invalid config:" : std::to_string(errors.size()) + " config errors:";
  for (const auto& e : errors) msg += "\n  " + e;
  throw ConfigError(msg);
}

Config load_node(const YAML::Node& root, const std::string& name, const std::vector<std::string>& overrides) {
  Config cfg;
  std::vector<std::string> errors;
  if (root && !root.IsNull()) {
    if (!root.IsMap()) throw ConfigError(name + ": the top level must be a mapping of sections (got " +
                                         shown(root) + ")");
    apply_document(root, name, true, cfg, errors);
  }
  for (const auto& o : overrides) apply_override(o, cfg, errors);
  throw_if(errors);
  resolve_defaults(cfg);
  throw_if(validate(cfg));
  return cfg;
}

YAML::Node parse_yaml(const std::string& text, const std::string& name) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw ConfigError(name + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
}

}  // namespace

std::vector<std::string> all_keys() {
  std::vector<std::string> out;
  Config c;
  c.visit_sections([&](const char* name, auto& section, const char*) {
    std::vector<std::string> keys;
    section.visit(KeyLister{keys});
    for (const auto& k : keys) out.push_back(std::string(name) + "." + k);
  });
  return out;
}

Config load_text(const std::string& yaml_text, const std::string& name, const std::vector<std::string>& overrides) {
  return load_node(parse_yaml(yaml_text, name), name, overrides);
}

Config load(const std::string& path, const std::vector<std::string>& overrides) {
  if (path.empty()) return load_node(YAML::Node(), "<defaults>", overrides);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw IoError("config file '" + path + "' is a directory; give a YAML file (e.g. configs/tiny.yaml)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot read config file '" + path + "': " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return load_text(ss.str(), path, overrides);
}

}  // namespace gspo::config

namespace gspo::config {

std::vector<std::string> differing_keys(const std::string& old_yaml, const std::string& new_yaml) {
  std::map<std::string, std::string> a, b;
  auto flatten = [](const std::string& text, std::map<std::string, std::string>& out) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception&) {
      return;
    }
    if (!root.IsMap()) return;
    for (const auto& section : root) {
      if (!section.second.IsMap()) continue;
      for (const auto& kv : section.second)
        out[section.first.Scalar() + "." + kv.first.Scalar()] = YAML::Dump(kv.second);
    }
  };
  flatten(old_yaml, a);
  flatten(new_yaml, b);
  std::vector<std::string> out;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end()) out.push_back(k + " (removed; was " + v + ")");
    else if (it->second != v) out.push_back(k + ": " + v + " -> " + it->second);
  }
  for (const auto& [k, v] : b)
    if (!a.count(k)) out.push_back(k + " (new: " + v + ")");
  return out;
}

}  // namespace gspo::config
