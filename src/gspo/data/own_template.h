// data.chat_template auto: the model's own Jinja chat template as a run renders it (prompts in dataset.cpp, tool turns
// in env/tool_format.cpp): parsed once, with the same variables everywhere.
#pragma once
#include <nlohmann/json.hpp>

#include "gspo/config/options.h"
#include "gspo/tokenizer/jinja.h"

namespace gspo::data {

// The model's own template (opts.chat_template_source, resolved from the model at start-up by
// io::resolve_chat_template), parsed once per text for the process. ConfigError when none was resolved.
const tokenizer::jinja::ChatJinja& own_template(const config::DataOptions& opts);

// The variables it renders with besides the conversation, as transformers passes them: bos_token, eos_token,
// enable_thinking.
nlohmann::ordered_json own_template_variables(const config::DataOptions& opts);

}  // namespace gspo::data
