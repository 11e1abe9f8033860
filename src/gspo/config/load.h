// Loading, overriding, validating and printing a Config. All problems found are reported together in one
// ConfigError, one per line, each naming the file and line (or --set), the key path, the rule and the value.
#pragma once
#include <string>
#include <vector>

#include "gspo/config/options.h"

namespace gspo::config {

// Loads `path` (empty = defaults only), applies `overrides` ("section.key=value", value parsed as YAML),
// fills loss-dependent defaults and validates. Throws ConfigError (IoError for unreadable files).
Config load(const std::string& path, const std::vector<std::string>& overrides = {});

// Loads YAML text as if it came from a file named `name` (used by tests and by resume).
Config load_text(const std::string& yaml_text, const std::string& name,
                 const std::vector<std::string>& overrides = {});

// The resolved config as YAML, every field present, with its doc as a comment. Re-loading it gives the
// same Config.
std::string to_yaml(const Config& cfg);

// The section.key entries that differ between two resolved configs (to_yaml output), as "key: old -> new".
std::vector<std::string> differing_keys(const std::string& old_yaml, const std::string& new_yaml);

// Markdown reference of every option: key, type, default, rule, doc (docs/config.md is generated from it).
std::string reference_markdown();

// All "section.key" paths, in table order.
std::vector<std::string> all_keys();

}  // namespace gspo::config
