#include "gspo/reward/scorers/judge.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/data/example.h"
#include "gspo/model/policy.h"
#include "gspo/reward/math/math_extract.h"
#include "gspo/rollout/noise.h"
#include "gspo/rollout/sampler.h"
#include "gspo/rollout/sampling_config.h"
#include "gspo/tokenizer/chat_template.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::reward {
namespace {

// Where the response goes in the rendered question: it is encoded apart from the text around it (as plain text).
const std::string kMark = std::string("\0gspo:response\0", 15);

// judge_template with {prompt}, {answer} and {response} filled in one pass (filled text is never read again, so a
// response holding "{answer}" stays as written). DataError for {answer} on a row without one.
std::string fill(const std::string& tmpl, const data::Example& ex, const std::string& response) {
  std::string out;
  out.reserve(tmpl.size() + ex.prompt.size() + response.size() + ex.answer.size());
  for (size_t i = 0; i < tmpl.size();) {
    auto field = [&](const char* name) { return tmpl.compare(i, std::char_traits<char>::length(name), name) == 0; };
    if (field("{prompt}")) {
      out += ex.prompt, i += 8;
    } else if (field("{response}")) {
      out += response, i += 10;
    } else if (field("{answer}")) {
      if (ex.answer.empty()) throw DataError("reward.judge_template asks for {answer}, and the row has none");
      out += ex.answer, i += 8;
    } else {
      out += tmpl[i++];
    }
  }
  return out;
}

int64_t verdict_id(const tokenizer::Tokenizer& tok, const std::string& text, const std::string& key, int64_t vocab) {
  const auto ids = tok.encode(text);
  if (ids.size() != 1 || ids[0] >= vocab) {
    std::string shown;
    for (auto id : ids) shown += (shown.empty() ? "" : ", ") + std::to_string(id);
    throw ConfigError(key + ": the verdict '" + text + "' is " + std::to_string(ids.size()) + " tokens of the judge's " +
                      "tokenizer [" + shown + "]; a verdict must be one token the judge can write");
  }
  return ids[0];
}

// The sampler's parameters for a judgement: rollout's device settings, the judge's own sampling, no KV budget (the
// passes are cut to reward.model_batch_tokens instead).
rollout::SamplingParams judgement_params(const config::Config& cfg) {
  auto p = rollout::sampling_params(cfg);
  p.temperature = cfg.reward.judge.temperature;
  p.top_p = 1.0;
  p.top_k = 0;
  p.max_new_tokens = cfg.reward.judge.max_new_tokens;
  p.min_new_tokens = 0;
  p.stop.clear();
  p.vocab_limit = 0;
  p.kv_cache_bytes = 0;
  p.kv_cache_fraction = 0;
  p.progress = false;
  p.insert_capacity = 0;
  return p;
}

}  // namespace

JudgementScore parse_judgement(const std::string& judgement, double max_score) {
  const auto boxed = last_boxed(judgement);
  if (!boxed) return {0, "no \\boxed{} in the judgement"};
  const std::string text = trim(*boxed);
  char* end = nullptr;
  const double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
    return {0, "the judgement's \\boxed{} holds no number ('" + boxed->substr(0, 40) + "')"};
  if (v < 0 || v > max_score) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "score %g outside [0, %g]", v, max_score);
    return {0, buf};
  }
  return {v / max_score, ""};
}

Judge::Judge(const config::Config& cfg, c10::Device device, const std::vector<data::Example>& rows)
    : opts_(cfg.reward.judge), scoring_(cfg.reward.scorer) {
  auto loaded = load_scorer(opts_.path, io::ModelLoad::Head::kPolicy, scoring_.dtype, device);
  chat_.emplace(opts_.chat, loaded, "reward.judge_chat", opts_.path);
  judge_ = std::move(loaded.policy);
  tok_ = std::move(loaded.tok);
  const auto& m = judge_->manifest();
  const int64_t context = m.max_seq_len;
  max_tokens_ = scoring_.max_tokens > 0 ? std::min(scoring_.max_tokens, context) : context;
  const bool verdict = opts_.mode == config::JudgeMode::kVerdict;
  if (verdict) {
    yes_id_ = verdict_id(*tok_, opts_.yes, "reward.judge_yes", m.vocab_size);
    no_id_ = verdict_id(*tok_, opts_.no, "reward.judge_no", m.vocab_size);
    if (yes_id_ == no_id_)
      throw ConfigError("reward.judge_no: '" + opts_.no + "' and reward.judge_yes '" + opts_.yes +
                        "' are the same token of the judge's tokenizer");
  } else {
    if (opts_.max_new_tokens >= context)
      throw ConfigError("reward.judge_max_new_tokens: " + std::to_string(opts_.max_new_tokens) +
                        " leaves no room for the question in the judge's context of " + std::to_string(context) +
                        " tokens");
    max_tokens_ = std::min(max_tokens_, context - opts_.max_new_tokens);
    sampler_ = std::make_unique<rollout::Sampler>(*judge_, *tok_, judgement_params(cfg));
  }
  check_some_row_fits(rows, max_tokens_, "the judge " + opts_.path,
                      scoring_.max_tokens > 0 ? "reward.model_max_tokens" : "reward.judge_template",
                      [&](const data::Example& ex) { return question_ids("", ex); });
  log::info("judge {}: {} ({} parameters, {} layers) on {}, {}; questions up to {} tokens, passes of {} tokens",
            opts_.path, m.architecture, judge_->num_parameters(), m.num_layers, judge_->device().str(),
            verdict ? "verdict " + opts_.yes + "/" + opts_.no
                    : "sampled judgements up to " + std::to_string(opts_.max_new_tokens) + " tokens",
            max_tokens_, scoring_.batch_tokens);
}

Judge::~Judge() = default;

std::string Judge::render(const std::string& response, const data::Example& ex) const {
  const std::string q = fill(opts_.question, ex, response);
  if (chat_->none()) return q;
  tokenizer::ChatOptions o;
  o.add_generation_prompt = true;
  o.enable_thinking = opts_.thinking;
  return chat_->render({{"user", q}}, o);
}

std::vector<int64_t> Judge::question_ids(const std::string& response, const data::Example& ex) const {
  if (ex.prompt.find(kMark) != std::string::npos || ex.answer.find(kMark) != std::string::npos)
    throw DataError("the row's prompt or answer holds NUL characters");
  const std::string text = render(kMark, ex);
  std::vector<int64_t> ids;
  size_t from = 0;
  for (size_t at; (at = text.find(kMark, from)) != std::string::npos; from = at + kMark.size()) {
    const auto before = tok_->encode(text.substr(from, at - from));
    const auto said = tok_->encode_text(response);
    ids.insert(ids.end(), before.begin(), before.end());
    ids.insert(ids.end(), said.begin(), said.end());
  }
  const auto rest = tok_->encode(text.substr(from));
  ids.insert(ids.end(), rest.begin(), rest.end());
  if (tok_->add_bos() && tok_->bos_id() >= 0 && (ids.empty() || ids.front() != tok_->bos_id()))
    ids.insert(ids.begin(), tok_->bos_id());
  return ids;
}

std::vector<Score> Judge::score_batch(const std::vector<std::string>& responses,
                                      const std::vector<const data::Example*>& examples, const std::vector<ToolUse>*,
                                      int64_t) const {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Score> out(responses.size());
  for (auto& s : out) s.failure = "not judged";
  auto rows = rows_to_score(
      responses.size(), max_tokens_, {"the judge", "cannot be put to the judge"},
      [&](size_t i) { return question_ids(responses[i], *examples[i]); },
      [&](size_t i, const std::string& why) { out[i] = {0.0, false, "judge: " + why, {}, why}; });
  int64_t tokens = 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (opts_.mode == config::JudgeMode::kVerdict) {
    verdicts(rows, out, tokens);
  } else {
    judgements(rows, out, tokens);
  }
  totals_.rows += static_cast<int64_t>(responses.size());
  for (const auto& s : out)
    if (!s.failure.empty()) note_failure(totals_, s.failure);
  totals_.tokens += tokens;
  totals_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

void Judge::verdicts(std::vector<Pending>& rows, std::vector<Score>& out, int64_t& tokens) const {
  torch::NoGradGuard no_grad;
  const int64_t pad = std::max<int64_t>(0, judge_->manifest().pad_token_id);
  const auto pick = torch::tensor({yes_id_, no_id_}, torch::kLong).to(judge_->device());
  for (const auto& pass : passes_of(rows, scoring_.batch_tokens)) {
    const int64_t B = static_cast<int64_t>(pass.size()), T = static_cast<int64_t>(pass.front()->ids.size());
    std::vector<int64_t> ids(B * T, pad), mask(B * T, 0);
    for (int64_t b = 0; b < B; ++b) {  // left-padded: every row's next token is column T's
      const auto& r = pass[b]->ids;
      const int64_t first = b * T + T - static_cast<int64_t>(r.size());
      std::copy(r.begin(), r.end(), ids.begin() + first);
      std::fill(mask.begin() + first, mask.begin() + (b + 1) * T, 1);
    }
    auto on_device = [&](std::vector<int64_t>& v) {
      return torch::from_blob(v.data(), {B, T}, torch::kLong).to(judge_->device(), /*non_blocking=*/false, /*copy=*/true);
    };
    auto cache = judge_->init_cache(B, T);
    const auto logits = judge_->prefill(on_device(ids), on_device(mask), cache);
    const auto lp = torch::log_softmax(logits.to(torch::kFloat), -1).index_select(1, pick).to(torch::kDouble).cpu();
    const auto a = lp.accessor<double, 2>();
    for (int64_t b = 0; b < B; ++b) {
      Score& s = out[pass[b]->index];
      const double yes = a[b][0], no = a[b][1];
      if (std::isnan(yes) || std::isnan(no) || (std::isinf(yes) && std::isinf(no))) {
        const std::string why = std::isnan(yes) || std::isnan(no) ? "the judge returned nan"
                                                                  : "the judge gives neither verdict any probability";
        s = {0.0, false, "judge: " + why, {}, why};
        continue;
      }
      s.reward = 1.0 / (1.0 + std::exp(no - yes));  // P(yes) / (P(yes) + P(no))
      s.failure.clear();
      char buf[96];
      std::snprintf(buf, sizeof buf, "judge: P(%s) %.3f of verdict mass %.3f", opts_.yes.c_str(), s.reward,
                    std::exp(yes) + std::exp(no));
      s.detail = buf;
    }
    tokens += B * T;
  }
}

void Judge::judgements(std::vector<Pending>& rows, std::vector<Score>& out, int64_t& tokens) const {
  for (const auto& pass : passes_of(rows, scoring_.batch_tokens, opts_.max_new_tokens)) {
    std::vector<std::vector<int64_t>> prompts;
    for (const auto* r : pass) prompts.push_back(r->ids);
    const rollout::NoiseKey noise{rollout::mix_seed(0x6a75646765ULL, calls_++), 0};
    const auto batch = sampler_->generate(prompts, 1, noise);
    for (size_t b = 0; b < pass.size(); ++b) {
      Score& s = out[pass[b]->index];
      const auto parsed = parse_judgement(batch.response_text[b], opts_.max_score);
      std::string why = parsed.failure;
      if (!why.empty() && batch.finish[b] == rollout::Finish::kLength) why += ", cut off at reward.judge_max_new_tokens";
      const std::string& said = batch.response_text[b];
      s = {parsed.reward, false, "judge wrote: " + (said.size() > 200 ? "..." + said.substr(said.size() - 200) : said) +
                                     (why.empty() ? "" : " (" + why + ")"), {}, why};
    }
    tokens += batch.prompt_len * static_cast<int64_t>(pass.size()) + batch.generated_tokens();
  }
}

}  // namespace gspo::reward
