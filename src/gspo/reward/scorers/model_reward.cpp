#include "gspo/reward/scorers/model_reward.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/data/example.h"
#include "gspo/tokenizer/chat_template.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::reward {
namespace {

// (s - mean) / std over the finite scores (s - mean when they are all equal), then clipped to [-clip, clip].
void normalise(std::vector<Score>& out, const std::vector<bool>& scored, bool standardise, double clip) {
  double sum = 0, sq = 0, n = 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (scored[i]) sum += out[i].reward, n += 1;
  const double mean = n > 0 ? sum / n : 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (scored[i]) sq += (out[i].reward - mean) * (out[i].reward - mean);
  const double sd = n > 0 ? std::sqrt(sq / n) : 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!scored[i]) continue;
    double& r = out[i].reward;
    if (standardise) r = sd > 0 ? (r - mean) / sd : r - mean;
    if (clip > 0) r = std::clamp(r, -clip, clip);
  }
}

}  // namespace

ModelReward::ModelReward(const config::Config& cfg, c10::Device device, const std::vector<data::Example>& rows)
    : opts_(cfg.reward.model), scoring_(cfg.reward.scorer), data_(cfg.data) {
  auto loaded = load_scorer(opts_.path, io::ModelLoad::Head::kReward, scoring_.dtype, device);
  chat_.emplace(opts_.chat, loaded, "reward.model_template", opts_.path);
  rm_ = std::move(loaded.reward);
  tok_ = std::move(loaded.tok);
  const int64_t context = rm_->manifest().max_seq_len;
  max_tokens_ = scoring_.max_tokens > 0 ? std::min(scoring_.max_tokens, context) : context;
  probe();
  check_some_row_fits(rows, max_tokens_, "the reward model " + opts_.path,
                      scoring_.max_tokens > 0 ? "reward.model_max_tokens" : "reward.model_path",
                      [&](const data::Example& ex) { return tok_->encode(render("", ex)); });
  log::info("reward model {}: {} ({} parameters, {} layers) on {} in {}, conversations up to {} tokens, passes of {} "
            "tokens", opts_.path, rm_->manifest().architecture, rm_->num_parameters(),
            rm_->manifest().num_layers, rm_->device().str(), c10::toString(rm_->dtype()), max_tokens_, scoring_.batch_tokens);
}

ModelReward::~ModelReward() = default;

// One short conversation through the model at start-up: a model whose scores are not finite (NaN weights, a broken
// score head; `gspo inspect` refuses it too) would fail every row and train on zeros.
void ModelReward::probe() {
  auto ids = tok_->encode("Hello");
  if (ids.empty()) ids.push_back(std::max<int64_t>(0, rm_->manifest().pad_token_id));
  const auto n = static_cast<int64_t>(ids.size());
  const auto s = rm_->score(torch::tensor(ids, torch::kLong).view({1, n}).to(rm_->device()),
                           torch::ones({1, n}, torch::kLong).to(rm_->device())).to(torch::kFloat).cpu();
  const float v = s.reshape({-1})[0].item<float>();
  if (!std::isfinite(v))
    throw ModelContractError(opts_.path + ": the reward model scores a probe conversation as " +
                             (std::isnan(v) ? "nan" : "inf") + " (its weights or score head are broken; gspo inspect "
                             "checks this too): every row would fail and the policy would train on zeros");
}

std::string ModelReward::render(const std::string& response, const data::Example& ex) const {
  if (chat_->none()) return data::apply_template(data_.prompt_template, ex.prompt) + response;
  tokenizer::ChatOptions o;
  o.add_generation_prompt = false;
  return chat_->render({{"user", ex.prompt}, {"assistant", response}}, o);
}

std::vector<Score> ModelReward::score_batch(const std::vector<std::string>& responses,
                                            const std::vector<const data::Example*>& examples,
                                            const std::vector<ToolUse>*, int64_t) const {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Score> out(responses.size());
  std::vector<bool> scored(responses.size(), false);
  auto fail = [&](size_t i, const std::string& why) {
    out[i] = {0.0, false, "reward model: " + why, {}, why};
  };
  auto rows = rows_to_score(
      responses.size(), max_tokens_, {"the reward model", "cannot be encoded by its tokenizer"},
      [&](size_t i) { return tok_->encode(render(responses[i], *examples[i])); }, fail);
  int64_t tokens = 0;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& pass : passes_of(rows, scoring_.batch_tokens)) {
    const int64_t B = static_cast<int64_t>(pass.size()), T = static_cast<int64_t>(pass.front()->ids.size());
    auto ids = torch::full({B, T}, rm_->manifest().pad_token_id, torch::kLong);
    auto mask = torch::zeros({B, T}, torch::kLong);
    for (int64_t b = 0; b < B; ++b) {
      const auto& r = pass[b]->ids;
      const auto n = static_cast<int64_t>(r.size());
      ids[b].narrow(0, 0, n).copy_(torch::tensor(r, torch::kLong));
      mask[b].narrow(0, 0, n).fill_(1);
    }
    const auto s = rm_->score(ids.to(rm_->device()), mask.to(rm_->device())).cpu();
    const auto a = s.accessor<float, 1>();
    for (int64_t b = 0; b < B; ++b) {
      const size_t i = pass[b]->index;
      if (!std::isfinite(a[b])) {
        fail(i, std::string("returned ") + (std::isnan(a[b]) ? "nan" : "inf"));
        continue;
      }
      out[i].reward = a[b];
      scored[i] = true;
    }
    tokens += B * T;
  }
  normalise(out, scored, opts_.normalize, opts_.clip);
  totals_.rows += static_cast<int64_t>(responses.size());
  for (size_t i = 0; i < out.size(); ++i)
    if (!scored[i]) note_failure(totals_, out[i].failure);
  totals_.tokens += tokens;
  totals_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace gspo::reward
