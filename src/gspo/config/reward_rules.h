// The cross-field rules of reward's option groups (options_reward.h), one function a group, kept beside the groups;
// validate() calls them after every key is read (a row's own rule is in the group's table). Each appends one message
// per broken rule to `e`, naming the keys, their values and where they were set. `used`: whether reward.kind, or a
// component of reward.components, is the group's verifier.
#pragma once
#include <string>
#include <vector>

#include "gspo/config/options.h"

namespace gspo::config {

// reward.external_*: the external verifier needs its command.
void external_rules(const Config& c, bool used, std::vector<std::string>& e);
// reward.model_*: the chat template is a named one (used or not), and the model reward needs its file.
void model_reward_rules(const Config& c, bool used, std::vector<std::string>& e);
// reward.judge_*: the chat template is a named one (used or not); the judge needs its file, a template that shows the
// response and no misspelt placeholder, and in verdict mode two different verdicts.
void judge_rules(const Config& c, bool used, std::vector<std::string>& e);

}  // namespace gspo::config
