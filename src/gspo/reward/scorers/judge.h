// The judge reward (#55; docs/verifiers.md, "Generative judges"): a causal language model (any policy export, with its
// own tokenizer) asked reward.judge_template about a response, the question rendered as a user turn in
// reward.judge_chat with the assistant's turn opened.
//   verdict  reward = P(judge_yes) / (P(judge_yes) + P(judge_no)) at the first position the judge would write: one
//            prefill per pass of rows (left-padded, reward.model_batch_tokens), no sampling. Each verdict is one token
//            of the judge's tokenizer (checked at start-up).
//   sampled  the judge writes a judgement (gspo's sampler, reward.judge_temperature, at most judge_max_new_tokens);
//            reward = the number in its last \boxed{} / judge_max_score.
// The response is encoded as plain text (Tokenizer::encode_text): a response cannot close the judge's turn or open
// one with special-token strings. A row that cannot be judged gets reward 0 and a named, counted failure: a template
// asking for {answer} on a row without one, text the tokenizer cannot encode, a question longer than
// reward.model_max_tokens, a non-finite verdict, a judgement without a number in [0, judge_max_score] in a \boxed{}.
#pragma once
#include <c10/core/Device.h>

#include <memory>
#include <mutex>

#include "gspo/config/options.h"
#include "gspo/reward/scorers/model_scoring.h"
#include "gspo/reward/base/verifier.h"

namespace gspo::tokenizer { class Tokenizer; }
namespace gspo::model { class Policy; }
namespace gspo::rollout { class Sampler; }

namespace gspo::reward {

class Judge : public ModelScorer {
 public:
  // Loads reward.judge_path onto `device`, frozen (ModelContractError / IoError / DataError naming the file; a verdict
  // that is not one token: ConfigError naming reward.judge_yes or judge_no).
  // `rows`: the data it will judge; when not
  // one row's question fits in reward.model_max_tokens or can be asked (a template asking for {answer} of rows
  // without one), ConfigError.
  Judge(const config::Config& cfg, c10::Device device, const std::vector<data::Example>& rows = {});
  ~Judge() override;

  std::vector<Score> score_batch(const std::vector<std::string>& responses,
                                 const std::vector<const data::Example*>& examples, const std::vector<ToolUse>* uses,
                                 int64_t workers) const override;
  std::string name() const override { return "judge"; }
  std::optional<config::RewardKind> kind() const override { return config::RewardKind::kJudge; }

  // The judge's ids for `response` to `ex`: the question rendered, the response's text encoded as plain text.
  // DataError for a row the template cannot be filled for or text the tokenizer cannot encode.
  std::vector<int64_t> question_ids(const std::string& response, const data::Example& ex) const;
  // The question as text (the response's special-token strings shown as written).
  std::string render(const std::string& response, const data::Example& ex) const;
  int64_t yes_id() const { return yes_id_; }
  int64_t no_id() const { return no_id_; }

 private:
  // Verdict mode: one prefill per pass; sampled mode: one sampler call per pass. Fill out[row] for every row.
  void verdicts(std::vector<Pending>& rows, std::vector<Score>& out, int64_t& tokens) const;
  void judgements(std::vector<Pending>& rows, std::vector<Score>& out, int64_t& tokens) const;

  config::JudgeOptions opts_;
  config::ScorerOptions scoring_;
  int64_t max_tokens_ = 0;
  int64_t yes_id_ = -1, no_id_ = -1;
  std::optional<ScorerChat> chat_;  // reward.judge_chat
  std::unique_ptr<model::Policy> judge_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::unique_ptr<rollout::Sampler> sampler_;  // sampled mode
  mutable uint64_t calls_ = 0;                 // sampled mode: each call draws its own noise
};

// A sampled judgement's score: the number in the last \boxed{} of `judgement` divided by `max_score`, or a failure
// reason ("no \boxed{} in the judgement", "the judgement's \boxed{} holds no number", "score 12 outside [0, 10]").
struct JudgementScore {
  double reward = 0;
  std::string failure;  // "" = scored
};
JudgementScore parse_judgement(const std::string& judgement, double max_score);

}  // namespace gspo::reward
