#include "gspo/eval/set_summary.h"

namespace gspo::eval {

SetSummary summarize_set(const EvalSet& set, const std::vector<const data::Example*>& rows,
                         const std::vector<ProblemStats>& problems, bool majority, const Standings& standings) {
  auto summary = summarize(set.name, problems, majority, set.competition);
  if (standings.pack() && set.competition) add_codeelo(summary, *standings.pack(), set, rows, problems);
  return summary;
}

SetSummary summarize_set(const EvalSet& set, const std::vector<ProblemStats>& problems, bool majority,
                         const Standings& standings) {
  return summarize_set(set, example_pointers(set.rows), problems, majority, standings);
}

}  // namespace gspo::eval
