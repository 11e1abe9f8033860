// ChatML rendering against Qwen3's own Jinja template rendered by jinja2 (tests/golden/chat_template_reference.py).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/data/example.h"
#include "gspo/tokenizer/chat_template.h"
#include "helpers.h"

using namespace gspo;

TEST_CASE("ChatML equals Qwen3's Jinja template for plain conversations", "[tokenizer][chat]") {
  // The fixture make_chat_golden renders the cases from this file; without it there is nothing to compare against.
  if (!test::shared_data_or_skip(test::shared_path("data/tokenizers/qwen3/tokenizer_config.json"))) return;
  std::ifstream in(test::model_path("chat_cases.json"));
  REQUIRE(in);
  auto cases = nlohmann::json::parse(in)["cases"];
  REQUIRE(cases.size() == 5);
  for (const auto& c : cases) {
    std::vector<tokenizer::ChatMessage> msgs;
    for (const auto& m : c["messages"]) msgs.push_back({m["role"], m["content"]});
    tokenizer::ChatOptions o{c["add_generation_prompt"], c["enable_thinking"]};
    INFO(c["text"].get<std::string>());
    CHECK(tokenizer::render_chatml(msgs, o) == c["text"].get<std::string>());
  }
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
  CHECK_THROWS_AS(tokenizer::render_chatml({{"tool", "a"}}, {}), DataError);
}
