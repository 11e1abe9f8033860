#include "gspo/reward/scorers/scorer_table.h"

#include "gspo/reward/scorers/judge.h"
#include "gspo/reward/scorers/model_reward.h"

namespace gspo::reward {
namespace {

template <class Scorer>
std::unique_ptr<Verifier> make(const config::Config& cfg, c10::Device device, const std::vector<data::Example>& rows) {
  return std::make_unique<Scorer>(cfg, device, rows);
}

}  // namespace

const std::vector<ModelScorerRow>& model_scorers() {
  using Head = io::ModelLoad::Head;
  static const std::vector<ModelScorerRow> rows = {
      {config::RewardKind::kModel, "reward model", "reward.model_path",
       [](const config::RewardOptions& r) -> const std::string& { return r.model.path; }, Head::kReward,
       "reward model scoring pass", "reward scoring", false, &make<ModelReward>},
      {config::RewardKind::kJudge, "judge", "reward.judge_path",
       [](const config::RewardOptions& r) -> const std::string& { return r.judge.path; }, Head::kPolicy,
       "judge pass", "judging", true, &make<Judge>},
  };
  return rows;
}

const ModelScorerRow* model_scorer(config::RewardKind kind) {
  for (const auto& row : model_scorers())
    if (row.kind == kind) return &row;
  return nullptr;
}

}  // namespace gspo::reward
