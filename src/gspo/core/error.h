// The exception hierarchy of the library. Library code throws these; only apps/gspo/main.cpp maps them to
// exit codes (see exit_code()). Messages are complete sentences meant for the user: they name the file, key
// or line and the value that was wrong.
#pragma once
#include <stdexcept>
#include <string>

namespace gspo {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  virtual const char* kind() const noexcept { return "error"; }
  virtual int exit_code() const noexcept { return 1; }
};

// Bad command line or config (YAML) value: exit 2.
class ConfigError : public Error {
 public:
  using Error::Error;
  const char* kind() const noexcept override { return "config error"; }
  int exit_code() const noexcept override { return 2; }
};

// Bad input data: datasets, prompts, token ids: exit 3.
class DataError : public Error {
 public:
  using Error::Error;
  const char* kind() const noexcept override { return "data error"; }
  int exit_code() const noexcept override { return 3; }
};

// A model file that is not TorchScript or does not satisfy docs/model-contract.md: exit 4.
class ModelContractError : public Error {
 public:
  using Error::Error;
  const char* kind() const noexcept override { return "model contract error"; }
  int exit_code() const noexcept override { return 4; }
};

// Files and directories that cannot be read or written: exit 5.
class IoError : public Error {
 public:
  using Error::Error;
  const char* kind() const noexcept override { return "io error"; }
  int exit_code() const noexcept override { return 5; }
};

// A fault during training (non-finite loss, interrupted run): exit 6.
class TrainingError : public Error {
 public:
  using Error::Error;
  const char* kind() const noexcept override { return "training error"; }
  int exit_code() const noexcept override { return 6; }
};

// A failure between processes of a data-parallel run (rendezvous, a collective that timed out, a rank that died):
// exit 7.
class DistributedError : public Error {
 public:
  using Error::Error;
  const char* kind() const noexcept override { return "distributed error"; }
  int exit_code() const noexcept override { return 7; }
};

// A verifier that failed to produce a reward: an external verifier command that exited, wrote something that is not
// a number or did not answer in time; a sandbox that cannot be started: exit 8.
class VerifierError : public Error {
 public:
  using Error::Error;
  const char* kind() const noexcept override { return "verifier error"; }
  int exit_code() const noexcept override { return 8; }
};

// Exit code used when a run was interrupted by SIGINT/SIGTERM after saving what it could.
constexpr int kExitInterrupted = 130;

}  // namespace gspo
