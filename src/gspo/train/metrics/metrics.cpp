// The metrics table rendered: column statistics, the JSONL line, the Markdown and JSON references.
#include "gspo/train/metrics/metrics.h"

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

const char* name_of(Shown s) {
  switch (s) {
    case Shown::kAlways: return "always";
    case Shown::kKl: return "kl_coef > 0";
    case Shown::kCuda: return "CUDA";
    case Shown::kMultiRank: return "several ranks";
    case Shown::kMoe: return "MoE policy";
    case Shown::kRouting: return "MoE policy with algorithm.routing_metrics";
    case Shown::kMismatch: return "mismatch_metrics";
    case Shown::kDynamic: return "dynamic_sampling";
    case Shown::kOverlong: return "overlong_buffer > 0";
    case Shown::kPolicyMask: return "top_entropy_quantile < 1 or mis";
    case Shown::kZero3: return "zero_stage 3";
    case Shown::kTools: return "tools.list set";
    case Shown::kAsync: return "distributed.rollout_ranks > 0";
    case Shown::kStale: return "rollout_ranks > 0 or partial_rollout";
    case Shown::kPartial: return "async.partial_rollout";
    case Shown::kExperts: return "distributed.expert_parallel > 1";
  }
  return "?";
}

bool StepMetrics::shown(Shown s) const {
  switch (s) {
    case Shown::kAlways: return true;
    case Shown::kKl: return kl_on;
    case Shown::kCuda: return on_cuda;
    case Shown::kMultiRank: return multi_rank;
    case Shown::kMoe: return !moe_load_imbalance.empty();
    case Shown::kRouting: return routing_on;
    case Shown::kMismatch: return mismatch_on;
    case Shown::kDynamic: return dynamic_on;
    case Shown::kOverlong: return overlong_on;
    case Shown::kPolicyMask: return policy_mask_on;
    case Shown::kZero3: return zero3_on;
    case Shown::kTools: return tools_on;
    case Shown::kAsync: return async_on;
    case Shown::kStale: return async_on || partial_on;
    case Shown::kPartial: return partial_on;
    case Shown::kExperts: return experts_on;
  }
  return false;
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
  if constexpr (std::is_same_v<U, ColumnStat>) return r == Reduce::kGather;
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

std::string json_line(StepMetrics& m) {
  nlohmann::ordered_json j;
  m.visit([&](const char* name, auto&& field, Reduce, Match, Shown shown, const char*) {
    if (m.shown(shown)) j[name] = value_json(field);
  });
  return j.dump();
}

std::string metrics_reference_markdown() {
  std::ostringstream os;
  os << "| field | type | over ranks | across world sizes | written | meaning |\n|---|---|---|---|---|---|\n";
  StepMetrics m;
  m.visit([&](const char* name, auto&& field, Reduce r, Match match, Shown shown, const char* doc) {
    using U = std::decay_t<decltype(field)>;
    const std::string type = std::is_same_v<U, std::vector<double>> ? "list" : type_of(r, std::is_same_v<U, int64_t>);
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
