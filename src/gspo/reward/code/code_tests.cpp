#include "gspo/reward/code/code_tests.h"

#include <csignal>
#include <sstream>

namespace gspo::reward {

bool outputs_match(const std::string& got, const std::string& want) {
  std::istringstream a(got), b(want);
  std::string x, y;
  while (true) {
    bool ha = static_cast<bool>(a >> x), hb = static_cast<bool>(b >> y);
    if (!ha || !hb) return ha == hb;
    if (x != y) return false;
  }
}

std::string describe_failure(const RunResult& r) {
  if (r.timed_out || r.term_signal == SIGXCPU) return "time limit";
  if (r.output_overflow) return "output limit exceeded";
  if (r.term_signal) return "killed by signal " + std::to_string(r.term_signal);
  std::string tail = r.err.size() > 300 ? r.err.substr(r.err.size() - 300) : r.err;
  return "exit " + std::to_string(r.exit_code) + (tail.empty() ? "" : ": " + tail);
}

std::string failure_category(const RunResult& r) {
  if (r.timed_out || r.term_signal == SIGXCPU) return "timeout";
  if (r.output_overflow) return "output limit";
  if (r.err.find("SyntaxError:") != std::string::npos || r.err.find("IndentationError:") != std::string::npos)
    return "compile error";
  return "runtime error";
}

}  // namespace gspo::reward
