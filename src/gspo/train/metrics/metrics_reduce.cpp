// Cross-rank reduction of a step's metrics, driven by the table: the gathered columns travel in one all-gather
// (each rank's rows padded to the most any rank holds; the ranks' row counts travel in the sums' all-reduce, before
// it), the sums in one all-reduce, the extrema in one max all-reduce (minima negated).
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "gspo/parallel/comm.h"
#include "gspo/train/metrics/metrics.h"

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
    } else if constexpr (std::is_same_v<U, ColumnsStat>) {  // (every rank holds as many: the config's components)
      for (auto& c : *field.columns)
        if (std::find(columns.begin(), columns.end(), &c) == columns.end()) columns.push_back(&c);
    } else if constexpr (std::is_same_v<U, BySourceStat>) {  // the value column and the rows' source ids, when the
      if (field.names->empty()) return;                         // rows name sources (the same names on every rank)
      for (Column* c : {field.column, field.source})
        if (c && std::find(columns.begin(), columns.end(), c) == columns.end()) columns.push_back(c);
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

// This rank's rows: every column holds one value per rollout row.
int64_t rows_of(const std::vector<Column*>& cols) {
  if (cols.empty()) return 0;
  const int64_t n = static_cast<int64_t>(cols.front()->rows.size());
  for (const auto* c : cols)
    if (static_cast<int64_t>(c->rows.size()) != n)
      throw std::logic_error("metrics: per-row columns of different lengths (" + std::to_string(c->rows.size()) +
                             " vs " + std::to_string(n) + ")");
  return n;
}

// Columns side by side, [n, C], padded to [most, C] (the most rows a rank holds), all-gathered into [world * most, C]
// and unpadded by `counts` (every rank's rows): rank order is global row order.
void gather_columns(parallel::Comm& comm, const std::vector<Column*>& cols, const std::vector<double>& counts) {
  if (cols.empty()) return;
  const auto most = static_cast<int64_t>(*std::max_element(counts.begin(), counts.end()));
  if (most == 0) return;  // no rows on any rank
  const int64_t n = static_cast<int64_t>(cols.front()->rows.size());
  const int64_t C = static_cast<int64_t>(cols.size());
  auto t = torch::zeros({most, C}, torch::kDouble);
  auto ta = t.accessor<double, 2>();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < n; ++i) ta[i][c] = cols[c]->rows[i];
  auto all = comm.all_gather(t).contiguous();
  auto a = all.accessor<double, 2>();
  for (int64_t c = 0; c < C; ++c) {
    auto& rows = cols[c]->rows;
    rows.clear();
    for (int64_t r = 0; r < static_cast<int64_t>(counts.size()); ++r)
      for (int64_t i = 0; i < static_cast<int64_t>(counts[r]); ++i) rows.push_back(a[r * most + i][c]);
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

// Visits the scalar rows: f(value&, Reduce) for each number, in table order.
template <class F>
struct Scalars {
  F f;
  template <class T>
  void operator()(const char*, T&& field, Reduce r, Match, Shown, const char*) {
    using U = std::decay_t<T>;
    if constexpr (std::is_same_v<U, Mean>) {
      f(field.sum, r), f(field.count, r);
    } else if constexpr (std::is_same_v<U, Rate>) {
      f(field.amount, r), f(field.seconds, r);
    } else if constexpr (std::is_same_v<U, double>) {
      f(field, r);
    } else if constexpr (std::is_same_v<U, int64_t>) {
      double d = static_cast<double>(field);
      f(d, r);
      field = std::llround(d);
    }
  }
};
template <class F>
Scalars(F) -> Scalars<F>;

}  // namespace

std::vector<double> scalar_values(StepMetrics& m) {
  std::vector<double> out;
  m.visit(Scalars{[&](double& v, Reduce) { out.push_back(v); }});
  return out;
}

void merge_scalars(StepMetrics& m, const std::vector<double>& values, bool take_local) {
  size_t i = 0;
  m.visit(Scalars{[&](double& v, Reduce r) {
    if (i >= values.size()) throw std::logic_error("merge_scalars: fewer values than scalar rows");
    const double x = values[i++];
    switch (r) {
      case Reduce::kSame: case Reduce::kGather: break;
      case Reduce::kLocal: if (take_local) v += x; break;
      case Reduce::kMax: v = std::max(v, x); break;
      case Reduce::kMin: v = std::min(v, x); break;
      default: v += x;
    }
  }});
  if (i != values.size())
    throw std::logic_error("merge_scalars: " + std::to_string(values.size()) + " values for " + std::to_string(i) +
                           " scalar rows");
}

void reduce_across_ranks(StepMetrics& m, parallel::Comm& comm) {
  if (comm.world_size() == 1) return;
  Plan plan;
  m.visit(plan);
  std::vector<double> counts(static_cast<size_t>(comm.world_size()), 0.0);  // rank r's rows at r, summed over ranks
  counts[static_cast<size_t>(comm.rank())] = static_cast<double>(rows_of(plan.columns));
  for (auto& c : counts) plan.sums.push_back(&c);
  sum_values(comm, plan.sums, plan.int_sums);
  gather_columns(comm, plan.columns, counts);
  max_values(comm, plan.extrema);
}

}  // namespace gspo::train
