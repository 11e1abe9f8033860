// The external verifier's protocol failures: a program that answers garbage, exits or never answers fails with a
// VerifierError naming the command, within the timeout, and its destruction neither hangs nor leaves processes.
#include <catch2/catch.hpp>

#include <dirent.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <thread>

#include "gspo/core/error.h"
#include "gspo/reward/external/external.h"
#include "helpers.h"

using namespace gspo;
using reward::ExternalVerifier;
using Clock = std::chrono::steady_clock;

namespace {

const data::Example kEx{"t", "2+2=", "4", R"({"id": 7})", "", ""};

// The message of the VerifierError that `f` throws; fails the test when it throws nothing or another type.
template <class F>
std::string verifier_error(F&& f) {
  try {
    f();
  } catch (const VerifierError& e) {
    CHECK(e.exit_code() == 8);
    CHECK(std::string(e.kind()) == "verifier error");
    return e.what();
  } catch (const std::exception& e) {
    FAIL("expected a VerifierError, got: " << e.what());
  }
  FAIL("expected a VerifierError, nothing was thrown");
  return "";
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }


// Waits up to 2 s for the processes carrying `marker` to be gone (SIGKILL is delivered asynchronously).
bool gone(const std::string& marker) {
  for (int i = 0; i < 200 && test::processes_with(marker) > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return test::processes_with(marker) == 0;
}

}  // namespace

TEST_CASE("external verifier: a program that answers is asked once per response, in order", "[reward][external]") {
  const std::string path = std::string(GSPO_TEST_MODELS) + "/external_answers.py";
  {
    std::ofstream f(path);
    f << "import sys, json\n"
         "for line in sys.stdin:\n"
         "    r = json.loads(line)\n"
         "    ok = r['answer'] in r['response'] and r['prompt'] == '2+2=' and json.loads(r['row'])['id'] == 7\n"
         "    print(1.0 if ok else -0.5, flush=True)\n";
  }
  ExternalVerifier v(std::string(GSPO_PYTHON) + " " + path, 30);
  for (int i = 0; i < 3; ++i) {
    auto right = v.score("it is 4", kEx);
    CHECK(right.reward == 1.0);
    CHECK(right.correct);
    auto wrong = v.score("it is 5", kEx);
    CHECK(wrong.reward == -0.5);
    CHECK_FALSE(wrong.correct);
  }
  // Requests from several threads are serialised: each still gets its own answer.
  std::vector<std::string> responses;
  for (int i = 0; i < 40; ++i) responses.push_back(i % 2 ? "4" : "5");
  std::vector<const data::Example*> examples(responses.size(), &kEx);
  auto scores = reward::score_all(v, responses, examples, 4);
  for (size_t i = 0; i < scores.size(); ++i) CHECK(scores[i].reward == (i % 2 ? 1.0 : -0.5));
}

TEST_CASE("external verifier: an answer that is not a number names the command and what it wrote", "[reward][external]") {
  const std::string cmd = "while read l; do echo yes; done";
  ExternalVerifier v(cmd, 10);
  const auto msg = verifier_error([&] { v.score("x", kEx); });
  CHECK_THAT(msg, Catch::Contains("reward.external_command '" + cmd + "'"));
  CHECK_THAT(msg, Catch::Contains("wrote 'yes', not one number per line"));
  const std::string inf_cmd = "while read l; do echo inf; done";
  ExternalVerifier inf(inf_cmd, 10);
  CHECK_THAT(verifier_error([&] { inf.score("x", kEx); }), Catch::Contains("wrote 'inf'"));
  ExternalVerifier flood("read l; yes 1 | tr -d '\\n'", 10);  // digits, but never a newline
  const auto flood_msg = verifier_error([&] { flood.score("x", kEx); });
  CHECK_THAT(flood_msg, Catch::Contains("without a newline"));
}

TEST_CASE("external verifier: a program that exits fails the request and every later one", "[reward][external]") {
  ExternalVerifier v("exit 3", 10);
  const auto msg = verifier_error([&] { v.score("x", kEx); });
  CHECK_THAT(msg, Catch::Contains("reward.external_command 'exit 3'"));
  CHECK_THAT(msg, Catch::Contains("exited with status 3"));
  CHECK(verifier_error([&] { v.score("y", kEx); }) == msg);

  ExternalVerifier once("read l; echo 1", 10);  // answers one request, then exits
  CHECK(once.score("x", kEx).reward == 1.0);
  CHECK_THAT(verifier_error([&] { once.score("x", kEx); }), Catch::Contains("exited with status 0"));
}

TEST_CASE("external verifier: a program that never answers times out and is killed", "[reward][external]") {
  // A pipeline: the shell forks both sides, so only killing the process group stops the sleep. The markers carry this
  // process's id, so a sleep left by another run of the suite (one killed midway) is not counted as ours.
  const std::string marker = "1234.5" + std::to_string(getpid());
  const std::string cmd = "sleep " + marker + " | cat";
  auto v = std::make_unique<ExternalVerifier>(cmd, 1.0);
  auto t0 = Clock::now();
  const auto msg = verifier_error([&] { v->score("x", kEx); });
  const double waited = seconds_since(t0);
  CHECK_THAT(msg, Catch::Contains("reward.external_command '" + cmd + "' did not answer within 1 s"));
  CHECK(waited >= 0.9);
  CHECK(waited < 4);
  t0 = Clock::now();
  CHECK(verifier_error([&] { v->score("x", kEx); }) == msg);  // stays failed, at once
  CHECK(seconds_since(t0) < 0.5);
  CHECK(test::processes_with(marker) > 0);
  t0 = Clock::now();
  v.reset();  // stdin closed, ignored; killed after the grace period
  CHECK(seconds_since(t0) < reward::LineProcess::kExitGraceSeconds + 2);
  CHECK(gone(marker));

  // A request larger than the pipe buffer to a program that never reads: the write is bounded by the timeout too.
  const std::string deaf_marker = "1234.7" + std::to_string(getpid());
  t0 = Clock::now();
  {
    ExternalVerifier deaf("sleep " + deaf_marker, 1.0);
    CHECK_THAT(verifier_error([&] { deaf.score(std::string(1 << 20, 'x'), kEx); }),
               Catch::Contains("did not answer within 1 s"));
  }
  CHECK(seconds_since(t0) < 1 + reward::LineProcess::kExitGraceSeconds + 3);
  CHECK(gone(deaf_marker));
}

TEST_CASE("external verifier: the timeout must be positive", "[reward][external]") {
  CHECK_THROWS_AS(ExternalVerifier("cat", 0), ConfigError);
  CHECK_THROWS_WITH(ExternalVerifier("cat", -1), Catch::Contains("positive number of seconds (got -1)"));
}
