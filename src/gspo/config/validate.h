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

}  // namespace gspo::config
