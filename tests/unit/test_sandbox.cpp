// Adversarial programs in the code sandbox: each is contained, the test process is unaffected and nothing is left
// behind. Run in every isolation mode usable on this machine (namespaces as root, bubblewrap when it works).
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <dirent.h>
#include <fstream>

#include "gspo/core/fs.h"
#include "gspo/reward/code/code.h"
#include "gspo/reward/code/sandbox.h"
#include "helpers.h"
#include "two_ranks.h"

using namespace gspo;
using reward::SandboxMode;

namespace {

std::vector<SandboxMode> isolating_modes() {
  std::vector<SandboxMode> modes;
  reward::SandboxLimits l;
  // bwrap is the mode for non-root users (as root, RLIMIT_NPROC does not bind and namespaces are used instead).
  std::vector<SandboxMode> candidates = {SandboxMode::kNamespaces};
  if (geteuid() != 0) candidates = {SandboxMode::kBwrap};
  for (auto m : candidates) {
    try {
      if (reward::run_sandboxed({"/bin/true"}, {}, "", l, m).ok()) modes.push_back(m);
    } catch (const std::exception&) {
    }
  }
  return modes;
}

reward::SandboxLimits fast_limits() { return test::fast_sandbox_limits(); }

reward::RunResult py(const std::string& src, SandboxMode m, const std::string& input = "") {
  return reward::run_sandboxed({"/usr/bin/python3", "-I", "prog.py"}, {{"prog.py", src}}, input, fast_limits(), m);
}


// This process's sandbox directories still on disk (other test processes may run sandboxes concurrently).
int count_sandbox_dirs() {
  const std::string mine = "gspo-sbx-" + std::to_string(getpid()) + "-";
  int n = 0;
  for (const auto& name : core::list_dir("/tmp")) n += name.rfind(mine, 0) == 0;
  return n;
}

}  // namespace

TEST_CASE("the sandbox runs programs and reports exit status, output and stdin", "[sandbox]") {
  const int before = count_sandbox_dirs();
  for (auto m : isolating_modes()) {
    INFO(reward::sandbox_mode_name(m));
    auto r = py("import sys\nprint(sum(int(x) for x in sys.stdin.read().split()))\nsys.exit(3)", m, "1 2 3\n");
    CHECK(r.exit_code == 3);
    CHECK(r.out == "6\n");
    CHECK_FALSE(r.timed_out);
  }
  CHECK(count_sandbox_dirs() == before);
}

TEST_CASE("adversarial programs are contained", "[sandbox][adversarial]") {
  auto modes = isolating_modes();
  REQUIRE_FALSE(modes.empty());  // CI runs as root: namespaces must work there
  for (auto m : modes) {
    INFO(reward::sandbox_mode_name(m));
    const int dirs_before = count_sandbox_dirs();
    const auto t0 = std::chrono::steady_clock::now();

    auto loop = py("while True:\n    pass\n", m);
    CHECK_FALSE(loop.ok());
    CHECK(loop.seconds < fast_limits().wall_seconds + 2);

    auto bomb = py("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n", m);
    CHECK_FALSE(bomb.ok());
    // This process's sandboxes only: another test (the Gloo one below) runs prog.py beside this one under ctest -j.
    CHECK(test::processes_with("prog.py", "/tmp/gspo-sbx-" + std::to_string(getpid()) + "-") == 0);

    auto mem = py("x = []\nwhile True:\n    x.append(bytearray(50 * 1024 * 1024))\n", m);
    CHECK_FALSE(mem.ok());

    auto flood = py("import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n", m);
    CHECK(flood.output_overflow);
    CHECK(flood.out.size() <= (1 << 16) + 65536);

    const std::string outside = "/tmp/gspo_escape_" + std::to_string(getpid()) + "_" + reward::sandbox_mode_name(m);
    const std::string in_tree = std::string(GSPO_TEST_MODELS) + "/escape_" + reward::sandbox_mode_name(m);
    auto write = py("for p in ['" + outside + "', '" + in_tree + "']:\n    try:\n        open(p, 'w').write('x')\n"
                    "    except OSError:\n        pass\n", m);
    CHECK(write.exit_code == 0);
    CHECK_FALSE(core::exists(outside));
    CHECK_FALSE(core::exists(in_tree));

    int srv = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(srv, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    getsockname(srv, reinterpret_cast<sockaddr*>(&addr), &len);
    listen(srv, 1);
    const int port = ntohs(addr.sin_port);
    auto net = py("import socket\ns = socket.socket()\ns.settimeout(2)\ntry:\n    s.connect(('127.0.0.1', " +
                  std::to_string(port) + "))\n    print('connected')\nexcept OSError as e:\n    print('refused', e)\n", m);
    close(srv);
    CHECK(net.out.find("connected") == std::string::npos);

    const std::string marker = "9" + std::to_string(getpid()) + "7";
    auto orphan = py("import os, subprocess\nsubprocess.Popen(['/bin/sleep', '" + marker + "'], start_new_session=True)\n"
                     "os._exit(0)\n", m);
    CHECK(orphan.exit_code == 0);
    usleep(200 * 1000);
    CHECK(test::processes_with(marker) == 0);

    auto parent = py("import os, signal, sys\npid = int(sys.stdin.read())\ntry:\n    os.kill(pid, signal.SIGKILL)\n"
                     "    print('sent')\nexcept OSError as e:\n    print('denied', e)\n", m, std::to_string(getpid()));
    CHECK(parent.out.find("sent") == std::string::npos);  // and we are still alive to check it

    CHECK(count_sandbox_dirs() == dirs_before);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(secs < 40);  // every adversary was stopped by its limits, none hung the test
  }
}

TEST_CASE("code tests: stdio and function formats, partial credit, failure reasons", "[reward][code]") {
  reward::CodeOptions o;
  o.limits = fast_limits();
  auto stdio = reward::parse_code_tests(
      R"({"tests": {"type": "stdio", "cases": [{"input": "1 2\n", "output": "3\n"}, {"input": "5 5", "output": "11"},
          {"input": "0 0", "output": "0"}]}})", "row");
  auto r = reward::run_code_tests("a, b = map(int, input().split())\nprint(a + b)\n", stdio, o);
  CHECK(r.total == 3);
  CHECK(r.passed == 1);  // all-or-nothing stops at the first failure (test 2)
  CHECK(r.first_failure == "test 2: wrong answer");
  o.partial = true;
  r = reward::run_code_tests("a, b = map(int, input().split())\nprint(a + b)\n", stdio, o);
  CHECK(r.passed == 2);
  auto apps = reward::parse_code_tests(R"({"test_list": [{"input": "3\n", "output": ["9\n"]}]})", "row");
  CHECK(reward::run_code_tests("print(int(input())**2)", apps, o).passed == 1);
  CHECK(reward::run_code_tests("while True: pass", apps, o).first_failure == "test 1: time limit");
  auto he = reward::parse_code_tests(
      R"({"prompt": "def add(a, b):\n", "entry_point": "add", "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n"})",
      "row");
  CHECK(reward::run_code_tests("    return a + b\n", he, o).passed == 1);  // continues the prompt's signature
  CHECK(reward::run_code_tests("def add(a, b):\n    return a - b\n", he, o).passed == 0);
  CHECK(reward::extract_code("Here:\n```python\nprint(1)\n```\nand\n```python\nprint(2)\n```\n") == "print(2)\n");
  CHECK(reward::extract_code("no fences") == "no fences");
  CHECK(reward::outputs_match("1 2\n3  \n\n", "1 2 3"));
  CHECK_FALSE(reward::outputs_match("1 2", "1 2 3"));
  CHECK_THROWS_WITH(reward::parse_code_tests(R"({"prompt": "x"})", "f.jsonl:4"), Catch::Contains("f.jsonl:4: no tests found"));
}

TEST_CASE("the namespace sandbox still isolates in a process that has opened a Gloo process group", "[reward][sandbox]") {
  // Libraries register pthread_atfork handlers that close and reopen their own descriptors by number in a child; the
  // sandbox's child closes every inherited descriptor and reuses the numbers, so a fork() there lost its status pipe
  // and every distributed run's sandbox fell back to rlimits (no network or filesystem isolation).
  if (geteuid() != 0) {
    std::cout << "SKIPPED (not root: the namespace sandbox needs root)" << std::endl;
    return;
  }
  const auto errors = test::run_two_ranks([](parallel::Comm& comm, int) {
    auto t = torch::ones({4});
    comm.all_reduce(t);
  });
  REQUIRE(errors.error[0].empty());
  REQUIRE(errors.error[1].empty());
  for (int i = 0; i < 3; ++i) {
    const auto r = py("import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), 1)\n    print('net')\n"
                      "except OSError:\n    print('isolated')\n", SandboxMode::kNamespaces);
    INFO("exit " << r.exit_code << ", stderr " << r.err);
    CHECK(r.ok());
    CHECK(r.out == "isolated\n");
  }
}
