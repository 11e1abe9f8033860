// External verifier: a user program started once and reused. gspo writes one JSON line per response
// {"prompt", "response", "answer", "row"} to its stdin and reads one number per line from its stdout. With tools the
// response is the episode's final assistant turn and the line adds "tool_turns", "tool_calls", "tool_errors" and
// "tool_timeouts".
// Requests are serialised (one at a time). If the program exits, writes something that is not a number or does not
// answer within the timeout, scoring fails with a VerifierError that names the command and what went wrong; the
// verifier then stays failed (a late answer could not be matched to its request). Non-goal: restarting the program.
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "gspo/reward/external/line_process.h"
#include "gspo/reward/base/verifier.h"

namespace gspo::reward {

class ExternalVerifier : public Verifier {
 public:
  // Starts `command` via /bin/sh -c in its own process group. `timeout_s` (> 0, else ConfigError) bounds each
  // request: writing it and reading the answer line. Throws IoError when the pipes or the process cannot be made.
  explicit ExternalVerifier(std::string command, double timeout_s = 60);
  // Closes the program's stdin and stdout, waits up to LineProcess::kExitGraceSeconds for it to exit, then SIGKILLs
  // its group.
  ~ExternalVerifier() override = default;
  ExternalVerifier(const ExternalVerifier&) = delete;
  ExternalVerifier& operator=(const ExternalVerifier&) = delete;

  Score score(const std::string& response, const data::Example& ex) const override;
  Score score_episode(const std::string& response, const data::Example& ex, const ToolUse& use) const override;
  std::string name() const override { return "external"; }
  std::optional<config::RewardKind> kind() const override { return config::RewardKind::kExternal; }

 private:
  Score ask(const nlohmann::json& request) const;
  std::string who_;  // "reward.external_command '<command>'", the subject of every message
  double timeout_s_;
  mutable std::mutex mu_;
  std::unique_ptr<LineProcess> process_;  // requests under mu_
  mutable std::string failed_;            // the first failure's message; "" while healthy
};

}  // namespace gspo::reward
