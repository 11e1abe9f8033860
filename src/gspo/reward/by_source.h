// Routing by data source (verl's `data_source` column): under reward.kind auto, each row that names a source
// (data.source_key) is graded by the verifier its source maps to: reward.sources first, then the built-in table of
// verl's names (verl/utils/reward_score/__init__.py, default_compute_score). One verifier per kind used, built once
// by make_verifier (factory.cpp); rows without a source keep auto's rule by shape. Non-goal: model scorers or tool
// rewards per source (refused by config validation).
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gspo/reward/base/verifier.h"

namespace gspo::reward {

// The kind `source` maps to: the first reward.sources entry ("source:kind"; "prefix*:kind" by prefix) that names
// it, else the built-in table's; nullopt when neither does.
std::optional<config::RewardKind> source_kind(const std::vector<std::string>& sources, const std::string& source);

// Every source `rows` name with its kind, sorted by source. Throws ConfigError for a source neither reward.sources
// nor the table names, saying its first row (file:row), how many rows carry unknown sources and the known names.
std::map<std::string, config::RewardKind> route_sources(const std::vector<std::string>& sources,
                                                        const std::vector<data::Example>& rows);

// The built-in table in words ("openai/gsm8k, ... -> math; codecontests, ... -> code"), for messages.
std::string builtin_sources();

class BySource : public Verifier {
 public:
  // `verifiers`: one per kind used; `route`: each source's kind; `unsourced`: rows without a source (auto's rule by
  // shape), null when every row names one.
  BySource(std::map<config::RewardKind, std::unique_ptr<Verifier>> verifiers,
           std::map<std::string, config::RewardKind> route, std::unique_ptr<Verifier> unsourced);
  Score score(const std::string& response, const data::Example& ex) const override;
  Score score_episode(const std::string& response, const data::Example& ex, const ToolUse& use) const override;
  std::string name() const override;  // "by_source(openai/gsm8k:math,taco:code)"
  std::optional<config::RewardKind> kind() const override { return config::RewardKind::kAuto; }

 private:
  // The verifier of `ex`'s source; a source not routed at start-up (a row the run never loaded) is a VerifierError.
  const Verifier& pick(const data::Example& ex) const;

  std::map<config::RewardKind, std::unique_ptr<Verifier>> verifiers_;
  std::map<std::string, config::RewardKind> route_;
  std::unique_ptr<Verifier> unsourced_;
};

}  // namespace gspo::reward
