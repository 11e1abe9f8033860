#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <iostream>
#include <sstream>

#include "gspo/cli/commands.h"
#include "gspo/core/device.h"
#include "gspo/core/error.h"
#include "gspo/core/parse.h"
#include "gspo/io/model_load.h"
#include "gspo/io/model_ref.h"
#include "gspo/model/policy.h"
#include "gspo/rollout/sampler.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::cli {

std::vector<int64_t> parse_ids(const std::string& text, const std::string& flag) {
  std::vector<int64_t> ids;
  std::string cleaned = text;
  for (char& c : cleaned)
    if (c == ',' || c == '[' || c == ']') c = ' ';
  std::istringstream is(cleaned);
  std::string tok;
  while (is >> tok) {
    auto v = parse_int(tok);
    if (!v) throw ConfigError(flag + ": '" + tok + "' is not a token id (expected integers like 1,2,3)");
    ids.push_back(*v);
  }
  return ids;
}

namespace {
void check_args(const GenerateArgs& a) {
  if (a.prompts.empty() && a.prompt_ids.empty()) throw ConfigError("generate: give --prompt TEXT or --prompt-ids IDS");
  if (a.samples < 1) throw ConfigError("--samples must be >= 1 (got " + std::to_string(a.samples) + ")");
  if (a.max_new_tokens < 1) throw ConfigError("--max-new-tokens must be >= 1 (got " + std::to_string(a.max_new_tokens) + ")");
  if (a.min_new_tokens < 0 || a.min_new_tokens > a.max_new_tokens)
    throw ConfigError("--min-new-tokens (" + std::to_string(a.min_new_tokens) + ") must be in [0, --max-new-tokens (" +
                      std::to_string(a.max_new_tokens) + ")]");
  if (!(a.temperature >= 0)) throw ConfigError("--temperature must be >= 0");
  if (!(a.top_p > 0 && a.top_p <= 1)) throw ConfigError("--top-p must be in (0, 1] (got " + std::to_string(a.top_p) + ")");
  if (a.top_k < 0) throw ConfigError("--top-k must be >= 0 (0 disables)");
  for (const auto& p : a.prompts)
    if (p.empty()) throw DataError("--prompt is empty: give some text to continue");
}
}  // namespace

int generate(const GenerateArgs& a) {
  check_args(a);
  const auto ref = io::resolve_model_ref(a.model, a.adapter);
  io::ModelLoad what;
  what.file = ref.model;
  what.device = core::resolve_device(a.device, "--device");
  what.merge = ref.adapter;
  what.check_contract = false;  // (gspo inspect checks it)
  what.tokenizer_path = a.tokenizer;
  auto loaded = io::load_model(what);
  auto& policy = *loaded.policy;
  const auto& tok = loaded.tok;
  std::vector<std::vector<int64_t>> prompts;
  for (const auto& p : a.prompts) prompts.push_back(tok->encode_prompt(p));
  for (const auto& p : a.prompt_ids) {
    auto ids = parse_ids(p, "--prompt-ids");
    if (ids.empty()) throw DataError("--prompt-ids is empty: give at least one token id");
    prompts.push_back(ids);
  }
  rollout::SamplingParams sp{a.temperature, a.top_p, a.top_k, a.max_new_tokens, a.stop};
  sp.min_new_tokens = a.min_new_tokens;
  rollout::Sampler sampler(policy, *tok, sp);
  auto batch = sampler.generate(prompts, a.samples, {static_cast<uint64_t>(a.seed), 0});
  const auto& st = sampler.last_stats();
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    const auto& ids = batch.response_ids[r];
    const std::string text = tok->decode(ids);
    if (a.json) {
      auto lp = batch.behaviour_logprobs[r].narrow(0, 0, static_cast<int64_t>(ids.size()));
      std::vector<float> lps(lp.data_ptr<float>(), lp.data_ptr<float>() + lp.numel());
      nlohmann::json j{{"prompt", r / a.samples}, {"sample", r % a.samples}, {"prompt_ids", prompts[r / a.samples]},
                       {"ids", ids}, {"text", text}, {"logprobs", lps},
                       {"finish", rollout::finish_name(batch.finish[r])}};
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      std::cout << "--- prompt " << r / a.samples << " sample " << r % a.samples << " (" << ids.size()
                << " tokens, " << rollout::finish_name(batch.finish[r]) << ")\n"
                << text << "\n";
    }
  }
  if (!a.json) {
    std::cerr << "generated " << batch.generated_tokens() << " tokens in " << st.seconds << " s ("
              << (st.seconds > 0 ? batch.generated_tokens() / st.seconds : 0) << " tokens/s)\n";
  }
  return 0;
}

}  // namespace gspo::cli
