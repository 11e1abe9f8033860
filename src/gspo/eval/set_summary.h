// One set's summary as gspo eval, gspo score and validation make it (summary.h's SetSummary): the figures, the
// competition section when the set is a competition set (EvalSet::competition), and CodeElo's rating when a standings
// pack is given (standings.h). The caller adds what only it knows: the verifier's name, the skipped prompts, the
// source file, gspo score's coverage.
#pragma once
#include <vector>

#include "gspo/data/example.h"
#include "gspo/eval/eval_sets.h"
#include "gspo/eval/standings.h"
#include "gspo/eval/summary.h"

namespace gspo::eval {

// `problems[i]` is the graded `rows[i]` of `set` (gspo score: the rows it has responses for, in row order); cons@K
// when `majority` (Grader::math). Throws codeelo_summary's DataError when the pack rates none of the rows.
SetSummary summarize_set(const EvalSet& set, const std::vector<const data::Example*>& rows,
                         const std::vector<ProblemStats>& problems, bool majority, const Standings& standings);
// Over every row of the set, in order (gspo eval, validation).
SetSummary summarize_set(const EvalSet& set, const std::vector<ProblemStats>& problems, bool majority,
                         const Standings& standings);

}  // namespace gspo::eval
