// #66 item 1: data.chat_template auto renders prompts with the model's own Jinja template (tokenizer/jinja.h), found
// in the export's manifest (hf_source files: chat_template.jinja, else tokenizer_config.json's chat_template) by the
// loader (io/model_load.h) and resolved into the run's config at start-up.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <torch/script.h>

#include <fstream>
#include <sstream>

#include "gspo/config/load.h"
#include "gspo/config/options.h"
#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/data/example.h"
#include "gspo/io/model_load.h"
#include "gspo/model/manifest.h"
#include "gspo/model/policy.h"
#include "gspo/reward/scorers/model_scoring.h"
#include "helpers.h"

using namespace gspo;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A copy of tiny.pt whose manifest carries `files` as its hf_source files (as scripts/export_hf.py writes them).
std::string with_hf_files(const std::string& name, const nlohmann::json& files) {
  std::unordered_map<std::string, std::string> extra{{model::kManifestFile, ""}, {model::kTokenizerFile, ""}};
  auto m = torch::jit::load(test::model_path("tiny.pt"), torch::kCPU, extra);
  auto manifest = nlohmann::json::parse(extra[model::kManifestFile]);
  manifest["hf_source"] = {{"files", files}, {"dtype", "float32"}, {"dtype_exceptions", nlohmann::json::object()}};
  extra[model::kManifestFile] = manifest.dump();
  const std::string dir = test::fresh_dir("chat_auto_" + name);
  core::ensure_dir(dir);
  const std::string path = dir + "/" + name + ".pt";
  m.save(path, extra);
  return path;
}

io::LoadedModel load(const std::string& path) {
  io::ModelLoad what;
  what.file = path;
  what.frozen = true;
  what.check_contract = false;
  return io::load_model(what);
}

}  // namespace

TEST_CASE("chat_template auto with Qwen3's own template renders what the built-in chatml renders", "[chat][jinja]") {
  config::DataOptions own, builtin;
  own.chat_template = config::ChatTemplate::kAuto;
  own.chat_template_source = read(std::string(GSPO_SOURCE_DIR) + "/tests/data/chat_templates/Qwen-Qwen3.jinja");
  own.chat_template_origin = "Qwen-Qwen3.jinja";
  own.chat_eos_token = "<|im_end|>";
  builtin.chat_template = config::ChatTemplate::kChatml;  // equal to transformers' render (test_chat_template.cpp)
  for (const std::string system : {"", "You are a careful mathematician."})
    for (bool thinking : {true, false})
      for (const std::string problem : {"What is 2+3?", "Résous: x² = 4 (\"quotes\", <tags>)\n\nSecond line."}) {
        own.system_prompt = builtin.system_prompt = system;
        own.enable_thinking = builtin.enable_thinking = thinking;
        INFO("system '" << system << "' thinking " << thinking << " problem " << problem);
        CHECK(data::format_prompt(own, problem) == data::format_prompt(builtin, problem));
      }
}

TEST_CASE("the loader finds an export's chat template, and auto renders prompts with it", "[chat][jinja]") {
  const std::string tmpl = "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
                           "{% if add_generation_prompt %}[assistant]{% endif %}";
  const auto jinja_file = load(with_hf_files("jinja_file", {{"chat_template.jinja", tmpl}}));
  CHECK(jinja_file.chat_template == tmpl);
  CHECK_THAT(jinja_file.chat_template_origin, Catch::Contains("chat_template.jinja"));
  // tokenizer_config.json's chat_template, a string or named templates (the "default" one)
  const nlohmann::json named = {{"chat_template", {{{"name", "tool_use"}, {"template", "x"}},
                                                   {{"name", "default"}, {"template", tmpl}}}}};
  CHECK(load(with_hf_files("named", {{"tokenizer_config.json", named.dump()}})).chat_template == tmpl);
  const nlohmann::json plain = {{"chat_template", tmpl}};
  const auto from_config = load(with_hf_files("plain", {{"tokenizer_config.json", plain.dump()}}));
  CHECK(from_config.chat_template == tmpl);

  auto cfg = config::load_text("data: {task: jsonl, path: x.jsonl, chat_template: auto, system_prompt: be brief}\n",
                               "t.yaml");
  io::resolve_chat_template(cfg, from_config);
  const std::string bos = cfg.data.chat_bos_token;  // what the tiny tokenizer calls its BOS ("" when none)
  CHECK(data::format_prompt(cfg.data, "1+1=") == bos + "[system]be brief[user]1+1=[assistant]");
}

TEST_CASE("reward.model_template and reward.judge_chat auto render the scoring model's own template",
          "[chat][jinja]") {
  // Qwen3's template in the scoring model's export renders what the built-in chatml renders (which equals
  // transformers' render, test_chat_template.cpp): the reward model's [user, assistant] conversation, and the judge's
  // question with the assistant's turn opened, thinking on and off.
  const auto scorer = load(with_hf_files("qwen3_scorer", {{"chat_template.jinja",
      read(std::string(GSPO_SOURCE_DIR) + "/tests/data/chat_templates/Qwen-Qwen3.jinja")}}));
  reward::ScorerChat own(config::ChatTemplate::kAuto, scorer, "reward.model_template", "qwen3_scorer.pt");
  reward::ScorerChat builtin(config::ChatTemplate::kChatml, scorer, "reward.model_template", "qwen3_scorer.pt");
  CHECK_FALSE(own.none());
  const std::vector<tokenizer::ChatMessage> rm{{"user", "What is 2+3?"}, {"assistant", "<think>\nadd\n</think>\n\n5"}};
  CHECK(own.render(rm, {false, true}) == builtin.render(rm, {false, true}));
  for (bool thinking : {true, false}) {
    const std::vector<tokenizer::ChatMessage> q{{"user", "Is 5 the answer to 2+3? Say Yes or No."}};
    CHECK(own.render(q, {true, thinking}) == builtin.render(q, {true, thinking}));
  }
}

TEST_CASE("chat_template auto on a model without a template, and auto where it is not offered, are refused",
          "[chat][jinja]") {
  auto cfg = config::load_text("data: {task: jsonl, path: x.jsonl, chat_template: auto}\n", "t.yaml");
  const auto bare = load(test::model_path("tiny.pt"));
  CHECK(bare.chat_template.empty());
  CHECK_THROWS_AS(io::resolve_chat_template(cfg, bare), ConfigError);
  CHECK_THROWS_WITH(io::resolve_chat_template(cfg, bare),
                    Catch::Contains("data.chat_template auto") &&
                        Catch::Contains("tiny.pt") && Catch::Contains("carries no chat template"));
  // A scoring model's auto template: accepted by the config, refused when the model carries none.
  CHECK_NOTHROW(config::load_text("reward: {kind: model, model_path: r.pt, model_template: auto}\n", "r.yaml"));
  CHECK_THROWS_WITH(reward::ScorerChat(config::ChatTemplate::kAuto, bare, "reward.judge_chat", "judge.pt"),
                    Catch::Contains("reward.judge_chat auto") && Catch::Contains("judge.pt") &&
                        Catch::Contains("carries no chat template"));
  // An unsupported construct in a template is refused naming its line, not rendered wrong.
  config::DataOptions d;
  d.chat_template = config::ChatTemplate::kAuto;
  d.chat_template_source = "{{ messages[0].content }}\n{{ messages | frobnicate }}";
  d.chat_template_origin = "bad.jinja";
  CHECK_THROWS_WITH(data::format_prompt(d, "hi"), Catch::Contains("bad.jinja:2") && Catch::Contains("frobnicate"));
}
