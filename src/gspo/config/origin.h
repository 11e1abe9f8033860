// Where an option's value came from, as cross-field messages name it (Config::origin: the loader records each key it
// sets). Read by validate.cpp and the option groups' rules (reward_rules.cpp).
#pragma once
#include <string>

#include "gspo/config/options.h"

namespace gspo::config {

// Where `key` was set ("run.yaml:12", "--set ..."); for a key left out of a list item ("tools.list[0].name"), where
// the item is written; "<default>" for a default. The head of every message of validate().
std::string where_set(const Config& cfg, const std::string& key);

}  // namespace gspo::config
