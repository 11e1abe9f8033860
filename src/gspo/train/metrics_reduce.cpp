// Cross-rank reduction of a step's metrics, driven by the table: the gathered columns travel in one all-gather
// (every rank holds the same number of rows), the sums in one all-reduce, the extrema in one max all-reduce (minima
// negated).
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "gspo/parallel/comm.h"
#include "gspo/train/metrics.h"

namespace gspo::train {
namespace {

struct Plan {
  std::vector<Column*> columns;            // each once, in table order
  std::vector<double*> sums;
  std::vector<int64_t*> int_sums;
  std::vector<std::pair<double*, double>> extrema;  // (field, sign): +1 for a maximum, -1 for a minimum

  template <class T>
  void operator()(const char*, T&& field, Reduce r, Match, Shown, const char*) {
    using U = std::decay_t<T>;
    if constexpr (std::is_same_v<U, ColumnStat>) {
      Column* c = field.column;
      if (std::find(columns.begin(), columns.end(), c) == columns.end()) columns.push_back(c);
    } else if constexpr (std::is_same_v<U, Mean>) {
      sums.push_back(&field.sum);
      sums.push_back(&field.count);
    } else if constexpr (std::is_same_v<U, Rate>) {
      sums.push_back(&field.amount);
    } else if constexpr (std::is_same_v<U, int64_t>) {
      if (r == Reduce::kSum) int_sums.push_back(&field);
    } else if constexpr (std::is_same_v<U, double>) {
      if (r == Reduce::kSum) sums.push_back(&field);
      if (r == Reduce::kMax) extrema.emplace_back(&field, 1.0);
      if (r == Reduce::kMin) extrema.emplace_back(&field, -1.0);
    }
  }
};

// Columns side by side, [n, C], all-gathered into [world * n, C]: rank order is global row order.
void gather_columns(parallel::Comm& comm, const std::vector<Column*>& cols) {
  if (cols.empty()) return;
  const int64_t n = static_cast<int64_t>(cols.front()->rows.size());
  const int64_t C = static_cast<int64_t>(cols.size());
  for (const auto* c : cols)  // one value per rollout row in every column
    if (static_cast<int64_t>(c->rows.size()) != n)
      throw std::logic_error("metrics: per-row columns of different lengths (" + std::to_string(c->rows.size()) +
                             " vs " + std::to_string(n) + ")");
  auto t = torch::empty({n, C}, torch::kDouble);
  auto ta = t.accessor<double, 2>();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < n; ++i) ta[i][c] = cols[c]->rows[i];
  auto all = comm.all_gather(t).contiguous();
  auto a = all.accessor<double, 2>();
  for (int64_t c = 0; c < C; ++c) {
    auto& rows = cols[c]->rows;
    rows.assign(all.size(0), 0.0);
    for (int64_t i = 0; i < all.size(0); ++i) rows[i] = a[i][c];
  }
}

void sum_values(parallel::Comm& comm, const std::vector<double*>& sums, const std::vector<int64_t*>& ints) {
  const size_t n = sums.size() + ints.size();
  if (n == 0) return;
  auto t = torch::empty({static_cast<int64_t>(n)}, torch::kDouble);
  auto ta = t.accessor<double, 1>();
  for (size_t i = 0; i < sums.size(); ++i) ta[i] = *sums[i];
  for (size_t i = 0; i < ints.size(); ++i) ta[sums.size() + i] = static_cast<double>(*ints[i]);
  comm.all_reduce(t);
  for (size_t i = 0; i < sums.size(); ++i) *sums[i] = ta[i];
  for (size_t i = 0; i < ints.size(); ++i) *ints[i] = std::llround(ta[sums.size() + i]);
}

void max_values(parallel::Comm& comm, const std::vector<std::pair<double*, double>>& extrema) {
  if (extrema.empty()) return;
  auto t = torch::empty({static_cast<int64_t>(extrema.size())}, torch::kDouble);
  auto ta = t.accessor<double, 1>();
  for (size_t i = 0; i < extrema.size(); ++i) ta[i] = *extrema[i].first * extrema[i].second;
  comm.all_reduce(t, parallel::ReduceOp::kMax);
  for (size_t i = 0; i < extrema.size(); ++i) *extrema[i].first = ta[i] * extrema[i].second;
}

}  // namespace

void reduce_across_ranks(StepMetrics& m, parallel::Comm& comm) {
  if (comm.world_size() == 1) return;
  Plan plan;
  m.visit(plan);
  gather_columns(comm, plan.columns);
  sum_values(comm, plan.sums, plan.int_sums);
  max_values(comm, plan.extrema);
}

}  // namespace gspo::train
