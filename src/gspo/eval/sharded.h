// One eval set evaluated by every rank of a data-parallel run: rank r takes the r-th contiguous block of problems,
// the per-problem statistics are all-gathered in problem order, and every rank summarises the same list, so the
// summary equals a single process's up to floating-point differences in sampling across batch shapes.
#pragma once
#include "gspo/eval/evaluator.h"
#include "gspo/eval/set_summary.h"

namespace gspo::parallel { class Comm; }

namespace gspo::eval {

// The problems [begin, end) of `rank` among `world` for `problems` problems.
std::pair<size_t, size_t> shard_of(size_t problems, int64_t rank, int64_t world);

// The set's summary (summarize_set, with CodeElo's rating when `standings` holds a pack), the same on every rank.
// `gathered`, when given, receives every problem's statistics in row order (the same on every rank); `lines`, when
// given, gets this rank's samples.jsonl lines (its problems', problem-major) appended as JSONL text.
SetSummary evaluate_sharded(Evaluator& evaluator, const EvalSet& set, size_t set_index, const Grader& grader,
                            const Standings& standings, parallel::Comm& comm,
                            std::vector<ProblemStats>* gathered = nullptr, std::string* lines = nullptr);

// ProblemStats <-> a fixed row of doubles (difficulty as an index into `levels`, failures over a fixed reason list;
// reasons outside it count as "other"). Exposed for the tests.
std::vector<double> pack_stats(const ProblemStats& s, const std::vector<std::string>& levels,
                               const std::vector<std::string>& sources = {});
ProblemStats unpack_stats(const double* row, const std::vector<std::string>& levels,
                          const std::vector<std::string>& sources = {});
size_t packed_width();

}  // namespace gspo::eval
