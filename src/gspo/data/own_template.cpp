#include "gspo/data/own_template.h"

#include <map>
#include <memory>
#include <mutex>

#include "gspo/core/error.h"

namespace gspo::data {

const tokenizer::jinja::ChatJinja& own_template(const config::DataOptions& o) {
  if (o.chat_template_source.empty())
    throw ConfigError("data.chat_template auto: no template was resolved from the model (io::resolve_chat_template)");
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const tokenizer::jinja::ChatJinja>> parsed;
  std::lock_guard<std::mutex> lock(mu);
  auto& t = parsed[o.chat_template_source];
  if (!t) t = std::make_shared<const tokenizer::jinja::ChatJinja>(o.chat_template_source, o.chat_template_origin);
  return *t;
}

nlohmann::ordered_json own_template_variables(const config::DataOptions& o) {
  return {{"bos_token", o.chat_bos_token}, {"eos_token", o.chat_eos_token}, {"enable_thinking", o.enable_thinking}};
}

}  // namespace gspo::data
