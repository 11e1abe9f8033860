// Routing by data source: the built-in table, reward.sources and the routing verifier.
#include "gspo/reward/by_source.h"

#include "gspo/config/choices.h"
#include "gspo/core/error.h"

namespace gspo::reward {
namespace {

using config::RewardKind;

struct BuiltinSource {
  const char* name;  // a trailing * matches by prefix
  RewardKind kind;
};

// verl's default_compute_score (verl/utils/reward_score/__init__.py): the names it grades as math (gsm8k, math_reward,
// math_dapo, prime_math) and as code (prime_code / sandbox_fusion). gspo's math verifier grades as Math-Verify, its
// code verifier runs the row's tests in the sandbox.
constexpr BuiltinSource kBuiltin[] = {
    {"openai/gsm8k", RewardKind::kMath},
    {"lighteval/MATH", RewardKind::kMath},
    {"DigitalLearningGmbH/MATH-lighteval", RewardKind::kMath},
    {"HuggingFaceH4/MATH-500", RewardKind::kMath},
    {"math_dapo", RewardKind::kMath},
    {"math", RewardKind::kMath},
    {"math_dapo_reasoning", RewardKind::kMath},
    {"aime*", RewardKind::kMath},
    {"numina_aops_forum", RewardKind::kMath},
    {"numina_synthetic_math", RewardKind::kMath},
    {"numina_amc_aime", RewardKind::kMath},
    {"numina_synthetic_amc", RewardKind::kMath},
    {"numina_cn_k12", RewardKind::kMath},
    {"numina_olympiads", RewardKind::kMath},
    {"codecontests", RewardKind::kCode},
    {"apps", RewardKind::kCode},
    {"codeforces", RewardKind::kCode},
    {"taco", RewardKind::kCode},
};

bool matches(const std::string& pattern, const std::string& source) {
  if (!pattern.empty() && pattern.back() == '*')
    return source.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0;
  return pattern == source;
}

}  // namespace

std::optional<RewardKind> source_kind(const std::vector<std::string>& sources, const std::string& source) {
  for (const auto& entry : sources) {  // (validated: "source:kind" with a rule kind)
    const auto colon = entry.rfind(':');
    if (colon != std::string::npos && matches(entry.substr(0, colon), source))
      return config::parse_choice<RewardKind>(entry.substr(colon + 1));
  }
  for (const auto& b : kBuiltin)
    if (matches(b.name, source)) return b.kind;
  return std::nullopt;
}

std::string builtin_sources() {
  std::string math, code;
  for (const auto& b : kBuiltin) {
    auto& list = b.kind == RewardKind::kMath ? math : code;
    list += (list.empty() ? "" : ", ") + std::string(b.name);
  }
  return math + " -> math; " + code + " -> code";
}

std::map<std::string, RewardKind> route_sources(const std::vector<std::string>& sources,
                                                const std::vector<data::Example>& rows) {
  std::map<std::string, RewardKind> route;
  std::string first_unknown, first_row;
  int64_t unknown_rows = 0;
  for (const auto& ex : rows) {
    if (ex.source.empty() || route.count(ex.source)) continue;
    if (const auto kind = source_kind(sources, ex.source))
      route.emplace(ex.source, *kind);
    else if (first_unknown.empty())
      first_unknown = ex.source, first_row = ex.id;
  }
  if (first_unknown.empty()) return route;
  for (const auto& ex : rows) unknown_rows += !ex.source.empty() && !route.count(ex.source) ? 1 : 0;
  std::string named;
  for (const auto& entry : sources) named += (named.empty() ? "" : ", ") + entry;
  throw ConfigError(first_row + ": data source '" + first_unknown + "' has no verifier (" +
                    std::to_string(unknown_rows) + (unknown_rows == 1 ? " row" : " rows") +
                    " with unknown sources); known sources: " + (named.empty() ? "" : "reward.sources [" + named + "]; ") +
                    "built in: " + builtin_sources() + ". Map it with reward.sources (\"" + first_unknown +
                    ":math\"), set reward.kind, or set data.source_key \"\" to grade rows by their shape");
}

BySource::BySource(std::map<RewardKind, std::unique_ptr<Verifier>> verifiers, std::map<std::string, RewardKind> route,
                   std::unique_ptr<Verifier> unsourced)
    : verifiers_(std::move(verifiers)), route_(std::move(route)), unsourced_(std::move(unsourced)) {}

const Verifier& BySource::pick(const data::Example& ex) const {
  if (ex.source.empty() && unsourced_) return *unsourced_;
  const auto it = route_.find(ex.source);
  if (it == route_.end())
    throw VerifierError(ex.id + ": data source '" + ex.source + "' was not routed when the verifier was built");
  return *verifiers_.at(it->second);
}

Score BySource::score(const std::string& response, const data::Example& ex) const {
  return pick(ex).score(response, ex);
}

Score BySource::score_episode(const std::string& response, const data::Example& ex, const ToolUse& use) const {
  return pick(ex).score_episode(response, ex, use);
}

std::string BySource::name() const {
  std::string n;
  for (const auto& [source, kind] : route_) n += (n.empty() ? "" : ",") + source + ":" + config::name_of(kind);
  return "by_source(" + n + (unsourced_ ? (n.empty() ? "" : ",") + std::string("*:") + unsourced_->name() : "") + ")";
}

}  // namespace gspo::reward
