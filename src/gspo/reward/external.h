// External verifier: a user program started once and reused. gspo writes one JSON line per response
// {"prompt", "response", "answer", "row"} to its stdin and reads one number per line from its stdout.
// Requests are serialised (one at a time). If the program exits or writes something that is not a number, scoring
// fails with a TrainingError that names the command and what it wrote.
#pragma once
#include <sys/types.h>

#include <cstdio>
#include <mutex>
#include <string>

#include "gspo/reward/verifier.h"

namespace gspo::reward {

class ExternalVerifier : public Verifier {
 public:
  explicit ExternalVerifier(std::string command);  // starts the program (via /bin/sh -c)
  ~ExternalVerifier() override;                    // closes its stdin and waits for it
  Score score(const std::string& response, const data::Example& ex) const override;
  std::string name() const override { return "external"; }

 private:
  std::string command_;
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
  mutable std::mutex mu_;
};

}  // namespace gspo::reward
