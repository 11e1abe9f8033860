// Option groups nested in a section keep the flat YAML keys users write: a group's visit() names its own fields
// ("path", "timeout_s") and the section's visit() hands it `prefixed("model_", v)`, so every visitor (the loader,
// --set, unknown-key suggestions, `gspo config`, docs/config.md) sees "model_path" as if the section held the field.
#pragma once
#include <string>
#include <type_traits>

#include "gspo/config/rule.h"

namespace gspo::config {

// Forwards each row to `v` with `prefix` before its key (the key text lives for the call only: visitors copy it).
template <class V>
struct Prefixed {
  const char* prefix;
  V& v;

  template <class T>
  void operator()(const char* key, T& field, const char* doc, const Rule& rule) {
    const std::string full = std::string(prefix) + key;
    v(full.c_str(), field, doc, rule);
  }
};

template <class V>
Prefixed<std::remove_reference_t<V>> prefixed(const char* prefix, V& v) {
  return {prefix, v};
}

}  // namespace gspo::config
