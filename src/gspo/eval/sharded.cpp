#include "gspo/eval/sharded.h"

#include <torch/torch.h>

#include <algorithm>
#include <set>

#include "gspo/parallel/comm.h"

namespace gspo::eval {
namespace {

const std::vector<std::string>& reasons() {
  static const std::vector<std::string> r = {"wrong answer",  "no answer found", "no code found", "compile error",
                                             "runtime error", "timeout",         "output limit",  "time limit",
                                             "memory limit",  "checker failure", "other"};
  return r;
}
// valid, n, c, majority, reward_sum, tokens_sum, tokens_max, difficulty, tool_samples, tool_calls, tool_calling,
// tool_failed, first_accepted, source
constexpr size_t kFixed = 14;

// `name`'s place in `names`, -1 for "" or a name not there.
double index_of(const std::string& name, const std::vector<std::string>& names) {
  const auto it = std::find(names.begin(), names.end(), name);
  return name.empty() || it == names.end() ? -1 : static_cast<double>(it - names.begin());
}

// The distinct non-empty values of one field of the set's rows, sorted: the same on every rank.
template <class F>
std::vector<std::string> distinct(const std::vector<data::Example>& rows, F field) {
  std::set<std::string> seen;
  for (const auto& ex : rows)
    if (!field(ex).empty()) seen.insert(field(ex));
  return {seen.begin(), seen.end()};
}

}  // namespace

size_t packed_width() { return kFixed + reasons().size(); }

std::pair<size_t, size_t> shard_of(size_t problems, int64_t rank, int64_t world) {
  const auto W = static_cast<size_t>(world), r = static_cast<size_t>(rank);
  return {problems * r / W, problems * (r + 1) / W};
}

std::vector<double> pack_stats(const ProblemStats& s, const std::vector<std::string>& levels,
                               const std::vector<std::string>& sources) {
  std::vector<double> row(packed_width(), 0.0);
  row[0] = 1;
  row[1] = static_cast<double>(s.n);
  row[2] = static_cast<double>(s.c);
  row[3] = s.majority_correct ? 1 : 0;
  row[4] = s.reward_sum;
  row[5] = static_cast<double>(s.tokens_sum);
  row[6] = static_cast<double>(s.tokens_max);
  row[7] = index_of(s.difficulty, levels);
  row[8] = static_cast<double>(s.tool_samples);
  row[9] = static_cast<double>(s.tool_calls);
  row[10] = static_cast<double>(s.tool_calling);
  row[11] = static_cast<double>(s.tool_failed);
  row[12] = static_cast<double>(s.first_accepted);
  row[13] = index_of(s.source, sources);
  for (const auto& [why, n] : s.failures) {
    auto it = std::find(reasons().begin(), reasons().end(), why);
    if (it == reasons().end()) it = reasons().end() - 1;
    row[kFixed + static_cast<size_t>(it - reasons().begin())] += static_cast<double>(n);
  }
  return row;
}

ProblemStats unpack_stats(const double* row, const std::vector<std::string>& levels,
                          const std::vector<std::string>& sources) {
  ProblemStats s;
  s.n = static_cast<int64_t>(row[1]);
  s.c = static_cast<int64_t>(row[2]);
  s.majority_correct = row[3] > 0;
  s.reward_sum = row[4];
  s.tokens_sum = static_cast<int64_t>(row[5]);
  s.tokens_max = static_cast<int64_t>(row[6]);
  if (row[7] >= 0) s.difficulty = levels.at(static_cast<size_t>(row[7]));
  s.tool_samples = static_cast<int64_t>(row[8]);
  s.tool_calls = static_cast<int64_t>(row[9]);
  s.tool_calling = static_cast<int64_t>(row[10]);
  s.tool_failed = static_cast<int64_t>(row[11]);
  s.first_accepted = static_cast<int64_t>(row[12]);
  if (row[13] >= 0) s.source = sources.at(static_cast<size_t>(row[13]));
  for (size_t i = 0; i < reasons().size(); ++i)
    if (row[kFixed + i] > 0) s.failures[reasons()[i]] = static_cast<int64_t>(row[kFixed + i]);
  return s;
}

SetSummary evaluate_sharded(Evaluator& evaluator, const EvalSet& set, size_t set_index, const Grader& grader,
                            const Standings& standings, parallel::Comm& comm, std::vector<ProblemStats>* gathered,
                            std::string* lines) {
  const size_t P = set.rows.size();
  const auto [begin, end] = shard_of(P, comm.rank(), comm.world_size());
  std::vector<ProblemStats> mine;
  {
    auto phase = evaluator.sampling_phase();  // (ranks' shards may take different numbers of calls)
    for (size_t start = begin; start < end; start += evaluator.chunk()) {
      auto graded = evaluator.run(set, set_index, grader, start, std::min(end, start + evaluator.chunk()));
      for (const auto& p : graded.problems) mine.push_back(stats_of(p));
      if (lines)
        for (const auto& l : graded.sample_lines)
          *lines += l.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    }
  }
  if (comm.world_size() == 1) {
    if (gathered != nullptr) *gathered = mine;
    return summarize_set(set, mine, grader.math, standings);
  }
  const auto levels = distinct(set.rows, [](const data::Example& ex) -> const std::string& { return ex.difficulty; });
  const auto sources = distinct(set.rows, [](const data::Example& ex) -> const std::string& { return ex.source; });
  const size_t block = (P + static_cast<size_t>(comm.world_size()) - 1) / static_cast<size_t>(comm.world_size());
  auto local = torch::zeros({static_cast<int64_t>(block), static_cast<int64_t>(packed_width())}, torch::kDouble);
  for (size_t i = 0; i < mine.size(); ++i) {
    const auto row = pack_stats(mine[i], levels, sources);
    std::copy(row.begin(), row.end(), local[static_cast<int64_t>(i)].data_ptr<double>());
  }
  const auto all = comm.all_gather(local).cpu().contiguous();
  std::vector<ProblemStats> problems;
  for (int64_t r = 0; r < all.size(0); ++r) {
    const double* row = all[r].data_ptr<double>();
    if (row[0] > 0) problems.push_back(unpack_stats(row, levels, sources));
  }
  if (gathered != nullptr) *gathered = problems;
  return summarize_set(set, problems, grader.math, standings);
}

}  // namespace gspo::eval
