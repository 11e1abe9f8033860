// What the verifiers that run a model on the device share (model_reward.h: a reward model's score; judge.h: a judge's
// verdict or judgement): how they load, the dtype they compute in, rows packed into passes under a token budget, and
// the `ModelScorer` base (batches, one call at a time, totals).
#pragma once
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "gspo/config/choices.h"
#include "gspo/data/example.h"
#include "gspo/io/model_load.h"
#include "gspo/tokenizer/chat_message.h"
#include "gspo/reward/base/verifier.h"

namespace gspo::tokenizer::jinja { class ChatJinja; }

namespace gspo::reward {

// reward.model_dtype: float32 or bfloat16 as asked; auto = bfloat16 on CUDA, float32 on the CPU.
c10::ScalarType score_dtype(config::ScoreDtype d, c10::Device device);

// A scoring model loaded through io::load_model: `path` frozen onto `device` in score_dtype(dtype, device), with its
// own tokenizer; a policy export (a judge: its contract checked) or a reward model (`head` kReward).
io::LoadedModel load_scorer(const std::string& path, io::ModelLoad::Head head, config::ScoreDtype dtype,
                            c10::Device device);

// A scoring model's chat format (reward.model_template, reward.judge_chat): none, a built-in family's, or auto, the
// model's own Jinja template (its export's chat_template.jinja or tokenizer_config.json's chat_template, found by
// io::load_model) rendered as transformers' apply_chat_template renders it, with its bos_token and eos_token.
class ScorerChat {
 public:
  // ConfigError naming `key` and the model's path when `chat` is auto and `loaded` carries no template, or when the
  // template does not parse. `loaded` needs its tokenizer.
  ScorerChat(config::ChatTemplate chat, const io::LoadedModel& loaded, const std::string& key,
             const std::string& path);
  ScorerChat(ScorerChat&&) noexcept;
  ~ScorerChat();
  bool none() const { return chat_ == config::ChatTemplate::kNone; }
  // `messages` (role, content) in the format; enable_thinking is passed to auto templates as a variable.
  std::string render(const std::vector<tokenizer::ChatMessage>& messages, const tokenizer::ChatOptions& o) const;

 private:
  config::ChatTemplate chat_;
  std::unique_ptr<tokenizer::jinja::ChatJinja> own_;  // auto
  nlohmann::ordered_json vars_;                        // auto: bos_token, eos_token
};

// A row to run: its place in the call and its ids.
struct Pending {
  size_t index;
  std::vector<int64_t> ids;
};

// What a scoring model is called in failure reasons, and how a row that cannot be encoded is described.
struct ScoringNames {
  std::string model;         // "the reward model": "longer than the reward model's context (...)"
  std::string cannot_encode; // "cannot be encoded by its tokenizer": "... (the error)"
};

// The rows of a batch that go to the model: `encode(i)` gives row i's ids (an exception fails that row only, its
// message cut to 120 characters); a row of no tokens or of more than `max_tokens` fails too. `fail(i, why)` records
// each failure; the others come back in row order.
std::vector<Pending> rows_to_score(size_t n, int64_t max_tokens, const ScoringNames& names,
                                   const std::function<std::vector<int64_t>(size_t)>& encode,
                                   const std::function<void(size_t, const std::string&)>& fail);

// Sorts `rows` longest first and packs them into passes of rows x (longest row + extra) <= budget tokens, each pass
// at least one row (`extra`: columns a pass adds to every row, e.g. the tokens a judge may write).
std::vector<std::vector<const Pending*>> passes_of(std::vector<Pending>& rows, int64_t budget, int64_t extra = 0);

// Start-up: a scorer that could score none of `rows` would train on zeros (every row a failure, reward 0). Throws
// ConfigError naming `key` when not one row's conversation with an empty response (`ids_of`) fits in `max_tokens`
// (rows that cannot be encoded count as not fitting). Stops at the first row that fits: cheap on any real data set.
// No rows (a scorer built before its data): nothing to check.
void check_some_row_fits(const std::vector<data::Example>& rows, int64_t max_tokens, const std::string& who,
                         const std::string& key, const std::function<std::vector<int64_t>(const data::Example&)>& ids_of);

// What a verifier that runs a model on the device (model_reward.h, judge.h) is besides its own scoring: scored a batch
// at a time (a row alone is a batch of one), one call at a time on the device, its totals kept for the step's
// metrics. A subclass scores in score_batch, under mu_, adding to totals_.
class ModelScorer : public Verifier, public BatchScoring {
 public:
  Score score(const std::string& response, const data::Example& ex) const override;
  const BatchScoring* scoring() const override { return this; }
  ScoringTotals totals() const override;

 protected:
  mutable std::mutex mu_;  // one scoring call at a time on the device
  mutable ScoringTotals totals_;
};

// The step's tally of a scorer's failures for the warning and the metrics: the latest failure's reason.
void note_failure(ScoringTotals& totals, const std::string& why);

}  // namespace gspo::reward
