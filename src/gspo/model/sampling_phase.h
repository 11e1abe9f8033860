// A sampling phase as a scope (model/expert_runner.h): when the scope closes normally, finish_expert_passes ends the
// phase, so no call site has to remember it. With experts on other ranks the end is a collective over the expert
// group that must come before the rank's next collective: close the scope right after the sampling calls. When an
// exception leaves the scope the end is skipped (the job is ending, and a collective started while unwinding would
// wait for ranks that are not coming), so the destructor throws only what finish() throws on a normal exit.
#pragma once
#include <exception>

#include "gspo/model/expert_runner.h"

namespace gspo::model {

class SamplingPhase {
 public:
  explicit SamplingPhase(Policy& policy) : policy_(policy), unwinding_(std::uncaught_exceptions()) {}
  SamplingPhase(const SamplingPhase&) = delete;
  SamplingPhase& operator=(const SamplingPhase&) = delete;
  ~SamplingPhase() noexcept(false) {
    if (std::uncaught_exceptions() == unwinding_) finish_expert_passes(policy_);
  }

 private:
  Policy& policy_;
  const int unwinding_;  // exceptions in flight when the phase began
};

}  // namespace gspo::model
