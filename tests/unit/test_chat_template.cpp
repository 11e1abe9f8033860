// Chat formats against transformers' apply_chat_template with each family's own Jinja template (Qwen2.5-Instruct,
// Qwen3 with thinking on and off, DeepSeek-R1-Distill-Qwen), rendered by tests/golden/chat_template_reference.py.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/data/example.h"
#include "gspo/tokenizer/chat_template.h"
#include "helpers.h"

using namespace gspo;

TEST_CASE("chat formats equal transformers' apply_chat_template for Qwen2.5, Qwen3 and DeepSeek-R1", "[tokenizer][chat]") {
  // The fixture make_chat_golden renders the cases; without ../shared's templates there is nothing to compare against.
  for (const char* f : {"data/tokenizers/qwen3/tokenizer_config.json", "data/tokenizers/qwen2.5/tokenizer.json",
                        "data/tokenizers/qwen/chat_template_Qwen2.5-7B-Instruct.jinja",
                        "data/tokenizers/qwen/chat_template_DeepSeek-R1-Distill-Qwen-32B.jinja"})
    if (!test::shared_data_or_skip(test::shared_path(f))) return;
  std::ifstream in(test::model_path("chat_cases.json"));
  REQUIRE(in);
  auto cases = nlohmann::json::parse(in)["cases"];
  std::map<std::string, int> per_family;
  for (const auto& c : cases) {
    const std::string family = c["family"];
    std::vector<tokenizer::ChatMessage> msgs;
    for (const auto& m : c["messages"]) {
      msgs.push_back({m["role"], m["content"]});
      if (m.contains("reasoning_content")) msgs.back().reasoning_content = m["reasoning_content"].get<std::string>();
    }
    tokenizer::ChatOptions o{c["add_generation_prompt"], c["enable_thinking"]};
    INFO(family << " thinking " << o.enable_thinking << " generation prompt " << o.add_generation_prompt << "\n"
                << c["messages"].dump() << "\nwant: " << nlohmann::json(c["text"]).dump());
    CHECK(tokenizer::render_chat(test::parse<config::ChatTemplate>(family), msgs, o) == c["text"].get<std::string>());
    ++per_family[family];
  }
  CHECK(per_family.size() == 3);
  for (const auto& [family, n] : per_family) CHECK(n == 34);  // 12 + 5 reasoning_content cases, thinking on and off
}

TEST_CASE("prompts from config: template, chat format, system prompt, thinking switch", "[tokenizer][chat]") {
  auto cfg = config::load_text("data:\n  prompt_template: 'Q: {prompt}'\n  chat_template: chatml\n"
                               "  system_prompt: 'Be exact.'\n  enable_thinking: false\n", "t.yaml");
  CHECK(data::format_prompt(cfg.data, "1+1?") ==
        "<|im_start|>system\nBe exact.<|im_end|>\n<|im_start|>user\nQ: 1+1?<|im_end|>\n<|im_start|>assistant\n"
        "<think>\n\n</think>\n\n");
  auto raw = config::load_text("data: {prompt_template: 'Q: {prompt}'}\n", "t.yaml");
  CHECK(data::format_prompt(raw.data, "1+1?") == "Q: 1+1?");
  CHECK_THROWS_AS(tokenizer::render_chatml({{"user", "a"}, {"system", "b"}}, {}), DataError);
  CHECK_THROWS_AS(tokenizer::render_chatml({{"function", "a"}}, {}), DataError);
  CHECK_THROWS_AS(tokenizer::render_chat(config::ChatTemplate::kDeepseekR1, {{"user", "a"}, {"system", "b"}}, {}), DataError);
  CHECK_THROWS_AS(tokenizer::render_chat(config::ChatTemplate::kNone, {{"user", "a"}}, {}), DataError);
}
