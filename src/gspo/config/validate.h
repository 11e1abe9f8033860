// Cross-field rules and loss-dependent defaults, applied after all keys are read.
#pragma once
#include <string>
#include <vector>

#include "gspo/config/options.h"

namespace gspo::config {

// Replaces sentinels with their resolved values (clip ranges per loss).
void resolve_defaults(Config& cfg);

// Returns one message per broken cross-field rule, each naming the keys, their values and their lines.
std::vector<std::string> validate(const Config& cfg);

// The prefix of an error about `key`: where it was set ("run.yaml:12: ", "--set: "), or "" for a default.
std::string set_at(const Config& cfg, const std::string& key);

}  // namespace gspo::config
