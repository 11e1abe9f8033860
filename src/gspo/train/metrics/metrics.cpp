// The metrics table rendered: column statistics, the JSONL line, the Markdown and JSON references.
#include "gspo/train/metrics/metrics.h"

#include "gspo/config/options.h"
#include "gspo/config/validate.h"
#include "gspo/reward/factory.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <type_traits>

namespace gspo::train {

const char* name_of(Reduce r) {
  switch (r) {
    case Reduce::kSame: return "same";
    case Reduce::kLocal: return "rank 0";
    case Reduce::kSum: return "sum";
    case Reduce::kMax: return "max";
    case Reduce::kMin: return "min";
    case Reduce::kMean: return "mean";
    case Reduce::kRate: return "rate";
    case Reduce::kGather: return "gather";
  }
  return "?";
}

const char* name_of(Match m) {
  switch (m) {
    case Match::kExact: return "exact";
    case Match::kClose: return "close";
    case Match::kNone: return "none";
  }
  return "?";
}

namespace {

// What a visibility rule reads.
struct ShownInputs {
  const config::Config& cfg;
  const ShownFacts& facts;
  const StepMetrics& m;
};

// The visibility table: each Shown, in words (docs/metrics.md's "shown" column) and as a rule.
struct ShownRule {
  Shown shown;
  const char* words;
  bool (*when)(const ShownInputs&);
};

using config::IsCorrection;
constexpr ShownRule kShownRules[] = {
    {Shown::kAlways, "always", [](const ShownInputs&) { return true; }},
    {Shown::kKl, "kl_coef > 0", [](const ShownInputs& in) { return in.cfg.algorithm.kl_coef > 0; }},
    {Shown::kCuda, "CUDA", [](const ShownInputs& in) { return in.facts.on_cuda; }},
    {Shown::kMultiRank, "several ranks", [](const ShownInputs& in) { return in.facts.world_size > 1; }},
    {Shown::kMoe, "MoE policy", [](const ShownInputs& in) { return !in.m.moe_load_imbalance.empty(); }},
    {Shown::kMismatch, "mismatch_metrics",
     [](const ShownInputs& in) {
       return in.cfg.algorithm.mismatch_metrics || in.cfg.algorithm.is_correction != IsCorrection::kNone;
     }},
    {Shown::kDynamic, "dynamic_sampling", [](const ShownInputs& in) { return in.cfg.rollout.dynamic_sampling; }},
    {Shown::kOverlong, "overlong_buffer > 0", [](const ShownInputs& in) { return in.cfg.reward.overlong_buffer > 0; }},
    {Shown::kPolicyMask, "top_entropy_quantile < 1 or mis",
     [](const ShownInputs& in) {
       return in.cfg.algorithm.top_entropy_quantile < 1 || in.cfg.algorithm.is_correction == IsCorrection::kMis;
     }},
    {Shown::kRouting, "MoE policy with algorithm.routing_metrics", [](const ShownInputs& in) { return in.facts.routing; }},
    {Shown::kZero3, "zero_stage 3", [](const ShownInputs& in) { return in.cfg.distributed.zero_stage == 3; }},
    {Shown::kTools, "tools.list set", [](const ShownInputs& in) { return !in.cfg.tools.list.empty(); }},
    {Shown::kAsync, "distributed.rollout_ranks > 0",
     [](const ShownInputs& in) { return in.cfg.distributed.rollout_ranks > 0; }},
    {Shown::kStale, "rollout_ranks > 0 or partial_rollout",
     [](const ShownInputs& in) { return in.cfg.distributed.rollout_ranks > 0 || in.cfg.async.partial_rollout; }},
    {Shown::kPartial, "async.partial_rollout", [](const ShownInputs& in) { return in.cfg.async.partial_rollout; }},
    {Shown::kExperts, "distributed.expert_parallel > 1",
     [](const ShownInputs& in) { return in.cfg.distributed.expert_parallel > 1; }},
    {Shown::kComponents, "reward.components set", [](const ShownInputs& in) { return !in.cfg.reward.components.empty(); }},
    {Shown::kScoring, "a model or judge reward", [](const ShownInputs& in) {
       return reward::scores_with_models(in.cfg);
     }},
    {Shown::kSources, "rows name data sources", [](const ShownInputs& in) { return !in.m.source_names.empty(); }},
    {Shown::kDistill, "distill.teacher set", [](const ShownInputs& in) { return !in.cfg.distill.teacher.empty(); }},
    {Shown::kRolloutRoutes, "MoE policy with algorithm.routing_metrics and routing_replay rollout",
     [](const ShownInputs& in) {
       return in.facts.routing && in.cfg.algorithm.routing_replay == config::RoutingReplay::kRollout;
     }},
    {Shown::kShared, "train.shared_prefix", [](const ShownInputs& in) { return in.cfg.train.shared_prefix; }},
};

constexpr bool every_shown_once() {
  for (size_t i = 0; i < static_cast<size_t>(Shown::kCount); ++i) {
    int rows = 0;
    for (const auto& r : kShownRules) rows += static_cast<size_t>(r.shown) == i ? 1 : 0;
    if (rows != 1) return false;
  }
  return true;
}
static_assert(every_shown_once(), "kShownRules: one row for each Shown");

}  // namespace

const char* name_of(Shown s) {
  for (const auto& r : kShownRules)
    if (r.shown == s) return r.words;
  return "?";
}

void StepMetrics::set_shown(const config::Config& cfg, const ShownFacts& facts) {
  const ShownInputs in{cfg, facts, *this};
  for (const auto& r : kShownRules) show(r.shown, r.when(in));
}

double Column::mean() const {
  double sum = 0;
  for (double x : rows) sum += x;
  return rows.empty() ? 0.0 : sum / static_cast<double>(rows.size());
}

double Column::std() const {
  if (rows.empty()) return 0.0;
  const double m = mean();
  double var = 0;
  for (double x : rows) var += (x - m) * (x - m);
  return std::sqrt(var / static_cast<double>(rows.size()));
}

double Column::min() const {
  double v = rows.empty() ? 0.0 : rows[0];
  for (double x : rows) v = std::min(v, x);
  return v;
}

double Column::max() const {
  double v = rows.empty() ? 0.0 : rows[0];
  for (double x : rows) v = std::max(v, x);
  return v;
}

std::vector<double> ColumnsStat::value() const {
  std::vector<double> out;
  for (auto& c : *columns) out.push_back(ColumnStat{&c, stat}.value());
  return out;
}

nlohmann::ordered_json BySourceStat::value() const {
  const size_t n = names->size();
  std::vector<double> sums(n + 1, 0.0), counts(n + 1, 0.0);  // [n]: rows without a source
  for (size_t i = 0; i < source->rows.size(); ++i) {
    const double id = source->rows[i];
    const size_t k = id >= 0 && id < static_cast<double>(n) ? static_cast<size_t>(id) : n;
    counts[k] += 1;
    sums[k] += column ? column->rows.at(i) : 1.0;
  }
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (size_t k = 0; k <= n; ++k) {
    if (counts[k] == 0) continue;
    auto& v = out[k < n ? (*names)[k] : "(none)"];
    v = column ? nlohmann::ordered_json(sums[k] / counts[k]) : nlohmann::ordered_json(static_cast<int64_t>(counts[k]));
  }
  return out;
}

double ColumnStat::value() const {
  switch (stat) {
    case Stat::kMean: return column->mean();
    case Stat::kStd: return column->std();
    case Stat::kMin: return column->min();
    case Stat::kMax: return column->max();
  }
  return 0.0;
}

namespace {

// The reductions a field type can take.
template <class T>
bool fits(Reduce r) {
  using U = std::decay_t<T>;
  if constexpr (std::is_same_v<U, ColumnStat> || std::is_same_v<U, ColumnsStat> || std::is_same_v<U, BySourceStat>)
    return r == Reduce::kGather;
  else if constexpr (std::is_same_v<U, Mean>) return r == Reduce::kMean;
  else if constexpr (std::is_same_v<U, Rate>) return r == Reduce::kRate;
  else if constexpr (std::is_same_v<U, std::vector<double>>) return r == Reduce::kLocal || r == Reduce::kSame;
  else if constexpr (std::is_same_v<U, int64_t>) return r == Reduce::kSame || r == Reduce::kLocal || r == Reduce::kSum;
  else return r != Reduce::kGather && r != Reduce::kMean && r != Reduce::kRate;  // double
}

// The value written for a field: an extremum over nothing (infinite) as 0.
template <class T>
nlohmann::ordered_json value_json(const T& field) {
  using U = std::decay_t<T>;
  if constexpr (std::is_same_v<U, double>) return written(field);
  else if constexpr (std::is_same_v<U, int64_t> || std::is_same_v<U, std::vector<double>>) return field;
  else return field.value();
}

std::string type_of(Reduce r, bool integer) {
  if (r == Reduce::kGather || r == Reduce::kMean || r == Reduce::kRate) return "number";
  return integer ? "integer" : "number";
}

}  // namespace

void check_metrics_table() {
  StepMetrics m;
  m.visit([](const char* name, auto&& field, Reduce r, Match, Shown, const char*) {
    if (!fits<decltype(field)>(r))
      throw std::logic_error(std::string("metrics table: '") + name + "' cannot be reduced as '" + name_of(r) + "'");
  });
}

std::string json_line(StepMetrics& m, const nlohmann::ordered_json* extra) {
  nlohmann::ordered_json j;
  m.visit([&](const char* name, auto&& field, Reduce, Match, Shown shown, const char*) {
    if (m.shown(shown)) j[name] = value_json(field);
  });
  if (extra)
    for (const auto& [key, value] : extra->items()) j[key] = value;
  return j.dump();
}

std::string metrics_reference_markdown() {
  std::ostringstream os;
  os << "| field | type | over ranks | across world sizes | written | meaning |\n|---|---|---|---|---|---|\n";
  StepMetrics m;
  m.visit([&](const char* name, auto&& field, Reduce r, Match match, Shown shown, const char* doc) {
    using U = std::decay_t<decltype(field)>;
    const bool list = std::is_same_v<U, std::vector<double>> || std::is_same_v<U, ColumnsStat>;
    const std::string type = list                                  ? "list"
                             : std::is_same_v<U, BySourceStat> ? "object"
                                                               : type_of(r, std::is_same_v<U, int64_t>);
    os << "| `" << name << "` | " << type << " | " << name_of(r) << " | " << name_of(match) << " | "
       << name_of(shown) << " | " << doc << " |\n";
  });
  return os.str();
}

std::string metrics_schema_json() {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  StepMetrics m;
  m.visit([&](const char* name, auto&&, Reduce r, Match match, Shown shown, const char* doc) {
    rows.push_back({{"name", name}, {"reduce", name_of(r)}, {"match", name_of(match)}, {"shown", name_of(shown)},
                    {"doc", doc}});
  });
  return rows.dump(1) + "\n";
}

}  // namespace gspo::train
