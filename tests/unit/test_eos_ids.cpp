// #65 item 2: a model with several EOS ids (Llama-3.x Instruct's config.json: [128001, 128008, 128009], the assistant
// turn ending with <|eot_id|>, the second) stops on any of them. It used to stop on the first alone, so every response
// ran to max_new_tokens. The manifest's eos_token_ids (docs/model-contract.md) carries the list; the sampler ends a row
// at the first token of the list it draws (finish "eos", the token kept in the ids, left out of the text), bans them all
// before min_new_tokens, and a manifest without the field behaves as [eos_token_id]. Also the BOS that a tokenizer.json
// post-processor adds (Llama 3's <|begin_of_text|>, TemplateProcessing) is added to a prompt, once.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <torch/script.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "gspo/core/error.h"
#include "gspo/model/manifest.h"
#include "gspo/rollout/sampler.h"
#include "gspo/tokenizer/tokenizer.h"
#include "helpers.h"

using namespace gspo;

namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// tiny.pt re-saved with `eos_token_ids` in its manifest (the weights and the tokenizer unchanged).
std::string with_eos_ids(const std::vector<int64_t>& ids, const std::string& name) {
  std::unordered_map<std::string, std::string> extra{{model::kManifestFile, ""}, {model::kTokenizerFile, ""}};
  auto m = torch::jit::load(test::model_path("tiny.pt"), torch::kCPU, extra);
  auto j = nlohmann::json::parse(extra[model::kManifestFile]);
  j["eos_token_ids"] = ids;
  extra[model::kManifestFile] = j.dump();
  const std::string dir = test::fresh_dir(name);
  core::ensure_dir(dir);
  const std::string out = dir + "/model.pt";
  m.save(out, extra);
  return out;
}

std::string manifest_text(const std::string& extra_fields) {
  return R"({"contract_version": 1, "vocab_size": 300, "max_seq_len": 64, "eos_token_id": 5)" + extra_fields + "}";
}

}  // namespace

TEST_CASE("the manifest's eos_token_ids: every id ends a response, absent eos_token_id alone, bad lists refused",
          "[rollout][eos]") {
  auto m = model::parse_manifest(manifest_text(""), "m.pt");
  CHECK(m.eos_token_ids == std::vector<int64_t>{5});
  m = model::parse_manifest(manifest_text(R"(, "eos_token_ids": [5, 7, 9])"), "m.pt");
  CHECK(m.eos_token_ids == std::vector<int64_t>{5, 7, 9});
  CHECK(model::is_eos(m, 7));
  CHECK_FALSE(model::is_eos(m, 6));
  CHECK_THROWS_WITH(model::parse_manifest(manifest_text(R"(, "eos_token_ids": [7, 5])"), "m.pt"),
                    Catch::Contains("m.pt") && Catch::Contains("must start with eos_token_id 5"));
  CHECK_THROWS_WITH(model::parse_manifest(manifest_text(R"(, "eos_token_ids": [5, 300])"), "m.pt"),
                    Catch::Contains("eos_token_ids entry 300 is outside the vocabulary"));
  CHECK_THROWS_WITH(model::parse_manifest(manifest_text(R"(, "eos_token_ids": "5")"), "m.pt"),
                    Catch::Contains("'eos_token_ids' has the wrong type"));
  CHECK_THROWS_AS(model::parse_manifest(manifest_text(R"(, "eos_token_ids": [])"), "m.pt"), ModelContractError);
}

TEST_CASE("a model with several EOS ids stops on any of them, and bans them all before min_new_tokens",
          "[rollout][eos]") {
  auto plain = test::load_tiny();
  auto tok = tokenizer::from_spec(plain.tokenizer_json(), "tiny.pt");
  const int64_t eos = plain.manifest().eos_token_id;
  const std::vector<std::vector<int64_t>> prompts{tok->encode_prompt("3+4="), tok->encode_prompt("12+7=")};
  rollout::SamplingParams sp{1.0, 1.0, 0, 24, {}};
  rollout::Sampler base(plain, *tok, sp);
  const auto before = base.generate(prompts, 4, {17, 0});
  // The token that the unconstrained responses draw most often before their end plays the second EOS.
  std::map<int64_t, int64_t> seen;
  for (const auto& r : before.response_ids)
    for (size_t i = 0; i + 1 < r.size(); ++i)
      if (r[i] != eos) ++seen[r[i]];
  REQUIRE_FALSE(seen.empty());
  const int64_t second = std::max_element(seen.begin(), seen.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  INFO("second EOS: token " << second << ", drawn " << seen[second] << " times");

  auto multi = model::Policy::load(with_eos_ids({eos, second}, "eos_ids_model"));
  REQUIRE(multi.manifest().eos_token_ids == std::vector<int64_t>{eos, second});
  rollout::Sampler s(multi, *tok, sp);
  const auto after = s.generate(prompts, 4, {17, 0});
  int64_t ended_by_second = 0;
  for (int64_t r = 0; r < after.num_rows(); ++r) {
    const auto& a = after.response_ids[r];
    const auto& b = before.response_ids[r];
    // the same draws up to the first token of the list (same noise key, same logits), then the row ends there
    const auto end = std::find_if(b.begin(), b.end(), [&](int64_t id) { return id == eos || id == second; });
    const size_t n = end == b.end() ? b.size() : static_cast<size_t>(end - b.begin()) + 1;
    CHECK(std::vector<int64_t>(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n)) == a);
    if (end != b.end()) {
      CHECK(after.finish[r] == rollout::Finish::kEos);
      if (*end == second) {
        ++ended_by_second;
        CHECK(after.response_text[r] == tok->decode(std::vector<int64_t>(a.begin(), a.end() - 1)));  // EOS not in the text
      }
    }
  }
  CHECK(ended_by_second > 0);
  // min_new_tokens bans every EOS id: no row ends before 6 tokens
  auto banned = sp;
  banned.min_new_tokens = 6;
  rollout::Sampler b6(multi, *tok, banned);
  const auto late = b6.generate(prompts, 4, {17, 0});
  for (int64_t r = 0; r < late.num_rows(); ++r) {
    const auto& a = late.response_ids[r];
    for (size_t i = 0; i < std::min<size_t>(5, a.size()); ++i) CHECK((a[i] != eos && a[i] != second));
  }
}

TEST_CASE("a tokenizer.json post-processor's leading special token is a prompt's BOS, added once", "[tokenizer][eos]") {
  // A byte-level BPE of four letters with Llama 3's post-processor (TemplateProcessing adding <|begin_of_text|>).
  const std::string tj = R"({
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "d": 3}, "merges": []},
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
    "added_tokens": [{"id": 4, "content": "<|begin_of_text|>", "special": true},
                     {"id": 5, "content": "<|eot_id|>", "special": true}],
    "post_processor": {"type": "Sequence", "processors": [
      {"type": "ByteLevel"},
      {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                                                {"Sequence": {"id": "A", "type_id": 0}}]}]}})";
  const std::string dir = test::fresh_dir("llama3_like_tokenizer");
  core::ensure_dir(dir);
  write_file(dir + "/tokenizer.json", tj);
  write_file(dir + "/tokenizer_config.json", R"({"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"})");
  auto tok = tokenizer::from_file(dir);
  CHECK(tok->bos_id() == 4);
  CHECK(tok->add_bos());
  CHECK(tok->encode_prompt("ab") == std::vector<int64_t>{4, 0, 1});
  CHECK(tok->encode_prompt("<|begin_of_text|>ab") == std::vector<int64_t>{4, 0, 1});  // a template's own BOS: once
  // add_bos_token false keeps it off (as transformers' Llama tokenizers do); no config: the post-processor's token
  write_file(dir + "/tokenizer_config.json", R"({"bos_token": "<|begin_of_text|>", "add_bos_token": false})");
  CHECK(tokenizer::from_file(dir)->encode_prompt("ab") == std::vector<int64_t>{0, 1});
  std::remove((dir + "/tokenizer_config.json").c_str());
  CHECK(tokenizer::from_file(dir)->encode_prompt("ab") == std::vector<int64_t>{4, 0, 1});
}

// #65 item 9: a tokenizer_config.json whose roles have the wrong type, an empty file, or a directory in its place was
// read as "no config" and the roles guessed; each is now an error naming tokenizer_config.json and the key.
TEST_CASE("a tokenizer_config.json with a role of the wrong type, empty, or a directory is refused naming it",
          "[tokenizer]") {
  const std::string dir = test::fresh_dir("bad_tokenizer_config");
  core::ensure_dir(dir);
  write_file(dir + "/tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []},
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
    "added_tokens": [{"id": 2, "content": "</s>", "special": true}]})");
  auto refused = [&](const std::string& cfg) {
    write_file(dir + "/tokenizer_config.json", cfg);
    try {
      tokenizer::from_file(dir);
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("<accepted>");
  };
  CHECK_THAT(refused(R"({"eos_token": 5})"), Catch::Contains(dir + "/tokenizer_config.json: eos_token is 5"));
  CHECK_THAT(refused(R"({"eos_token": ""})"), Catch::Contains("tokenizer_config.json: eos_token is \"\""));
  CHECK_THAT(refused(R"({"bos_token": {"content": 3}})"), Catch::Contains("tokenizer_config.json: bos_token is"));
  CHECK_THAT(refused(R"({"eos_token": "</s>", "add_bos_token": "yes"})"), Catch::Contains("add_bos_token is \"yes\""));
  CHECK_THAT(refused(""), Catch::Contains("tokenizer_config.json: the file is empty"));
  CHECK(refused(R"({"eos_token": {"content": "</s>"}, "bos_token": null})") == "<accepted>");
  std::remove((dir + "/tokenizer_config.json").c_str());
  std::filesystem::create_directory(dir + "/tokenizer_config.json");
  CHECK_THROWS_WITH(tokenizer::from_file(dir), Catch::Contains("tokenizer_config.json: is a directory"));
}
