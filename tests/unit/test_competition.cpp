// Competition problems (reward/code/competition.h) through the code verifier as `gspo eval` grades them: Python and C++
// solutions under the row's time and memory limits, every verdict, checkers (Python and C++) that accept, reject,
// crash or hang, and hostile solutions contained as in the code verifier.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "gspo/core/error.h"
#include "gspo/data/example.h"
#include "gspo/reward/code/code.h"
#include "gspo/reward/code/competition.h"
#include "helpers.h"

using namespace gspo;
using nlohmann::json;

namespace {

// A sum problem: "a b" -> a + b, two tests; `checker` optional.
data::Example sum_problem(const std::string& checker = "", const std::string& checker_language = "python",
                          double time_limit = 1, int64_t memory = 256) {
  json tests{{"type", "competition"},
             {"cases", json::array({{{"input", "1 2\n"}, {"output", "3\n"}}, {{"input", "10 -4\n"}, {"output", "6"}}})}};
  if (!checker.empty()) tests["checker"] = checker, tests["checker_language"] = checker_language;
  json row{{"problem", "Print a + b."}, {"time_limit_s", time_limit}, {"memory_limit_mb", memory},
           {"difficulty", 800}, {"tests", tests}};
  data::Example ex;
  ex.id = "sum.jsonl:1";
  ex.prompt = "Print a + b.";
  ex.row = row.dump();
  return ex;
}

reward::CodeVerifier verifier() {
  reward::CodeOptions o;
  o.limits = test::fast_sandbox_limits();
  return reward::CodeVerifier(o);
}

std::string py(const std::string& src) { return "Here it is:\n```python\n" + src + "\n```\n"; }
std::string cpp(const std::string& src) { return "```cpp\n" + src + "\n```"; }

const char* kCppSum = "#include <cstdio>\nint main(){long long a,b;scanf(\"%lld %lld\",&a,&b);printf(\"%lld\\n\",a+b);}";

// Accepts any output whose first token is the expected sum or its double (two right answers).
const char* kPyChecker = R"(import sys
inp, out, ans = (open(p).read().split() for p in sys.argv[1:4])
ok = len(out) == 1 and out[0] in (ans[0], str(2 * int(ans[0])))
sys.exit(0 if ok else 1)
)";

}  // namespace

TEST_CASE("competition: Python verdicts under the row's limits", "[competition]") {
  const auto v = verifier();
  const auto ex = sum_problem();
  auto verdict = [&](const std::string& response) { return v.score(response, ex); };
  const auto ok = verdict(py("a, b = map(int, input().split())\nprint(a + b)"));
  CHECK(ok.correct);
  CHECK(ok.detail == "2/2 tests passed");
  const auto wa = verdict(py("a, b = map(int, input().split())\nprint(a - b)"));
  CHECK(wa.failure == "wrong answer");
  CHECK_THAT(wa.detail, Catch::Contains("test 1: wrong answer"));
  CHECK(verdict(py("while True:\n    pass")).failure == "time limit");
  CHECK(verdict(py("x = bytearray(1 << 30)\nprint(len(x))")).failure == "memory limit");  // 1 GiB > 256 MB
  CHECK(verdict(py("raise ValueError('boom')")).failure == "runtime error");
  CHECK(verdict(py("def f(:\n  pass")).failure == "compile error");
  CHECK(verdict("no fenced block at all").failure == "no code found");
  const auto java = verdict("```java\nclass A {}\n```");
  CHECK(java.failure == "compile error");
  CHECK_THAT(java.detail, Catch::Contains("language 'java' is not supported"));
  // Whitespace-token comparison: extra spaces and blank lines are fine.
  CHECK(verdict(py("a, b = map(int, input().split())\nprint('  ', a + b, '\\n\\n')")).correct);
}

TEST_CASE("competition: C++ solutions compiled in the sandbox, with their verdicts", "[competition]") {
  const auto v = verifier();
  const auto ex = sum_problem();
  CHECK(v.score(cpp(kCppSum), ex).correct);
  CHECK(v.score("```c++\n" + std::string(kCppSum) + "\n```", ex).correct);
  const auto ce = v.score(cpp("int main( { return 0; }"), ex);
  CHECK(ce.failure == "compile error");
  CHECK_THAT(ce.detail, Catch::Contains("error"));
  CHECK(v.score(cpp("int main(){ volatile long x = 0; for(;;) ++x; }"), ex).failure == "time limit");
  CHECK(v.score(cpp("#include <vector>\n#include <cstdio>\nint main(){ std::vector<char> v(1L << 31, 1); "
                    "printf(\"%d\", v[5]); }"), ex).failure == "memory limit");
  CHECK(v.score(cpp("int main(){ return 3; }"), ex).failure == "runtime error");
  CHECK(v.score(cpp("#include <cstdio>\nint main(){ puts(\"4\"); }"), ex).failure == "wrong answer");
}

TEST_CASE("competition: a checker accepts several right answers, a broken one is a checker failure", "[competition]") {
  const auto v = verifier();
  const std::string doubled = py("a, b = map(int, input().split())\nprint(2 * (a + b))");
  CHECK_FALSE(v.score(doubled, sum_problem()).correct);  // token comparison rejects it
  CHECK(v.score(doubled, sum_problem(kPyChecker)).correct);
  CHECK(v.score(py("print(7)"), sum_problem(kPyChecker)).failure == "wrong answer");
  const auto crash = v.score(doubled, sum_problem("raise SystemExit(3)"));
  CHECK(crash.failure == "checker failure");
  CHECK_FALSE(crash.correct);
  CHECK(v.score(doubled, sum_problem("import os\nos.kill(os.getpid(), 9)")).failure == "checker failure");
  CHECK(v.score(doubled, sum_problem("while True: pass")).failure == "checker failure");
  CHECK(v.score(doubled, sum_problem("int main( {", "cpp")).failure == "checker failure");
  // A C++ checker: testlib's argument order (input, the solution's output, the expected answer).
  const std::string cpp_checker = R"(#include <fstream>
int main(int, char** argv){ long long o, a; std::ifstream(argv[2]) >> o; std::ifstream(argv[3]) >> a;
  return (o == a || o == 2 * a) ? 0 : 1; })";
  CHECK(v.score(doubled, sum_problem(cpp_checker, "cpp")).correct);
  CHECK(v.score(py("print(5)"), sum_problem(cpp_checker, "cpp")).failure == "wrong answer");
}

TEST_CASE("competition: hostile solutions stay contained", "[competition][adversarial]") {
  const auto v = verifier();
  const auto ex = sum_problem("", "python", 1, 256);
  // The expected outputs are not in the solution's sandbox; the solution sees only its own file.
  const auto look = v.score(py("import os\nprint(sorted(os.listdir('.')))"), ex);
  CHECK(look.failure == "wrong answer");
  // A fork bomb is held by the process limit and the time limit; this process is unaffected.
  const auto bomb = v.score(py("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"), ex);
  CHECK_FALSE(bomb.correct);
  CHECK(v.score(py("a, b = map(int, input().split())\nprint(a + b)"), ex).correct);
  // Output flooding is cut off.
  CHECK(v.score(py("while True:\n    print('x' * 1000)"), ex).failure == "output limit");
  // No network, in either language; a C++ fork bomb is held like the Python one.
  const auto net = v.score(py("import socket\ns = socket.create_connection(('1.1.1.1', 53), timeout=1)\nprint(3)"), ex);
  CHECK(net.failure == "runtime error");
  CHECK(v.score(cpp("#include <unistd.h>\nint main(){ for(;;) fork(); }"), ex).failure == "time limit");
  // A solution that kills its parent or writes outside its directory does not change the grading of the next one.
  CHECK_FALSE(v.score(py("import os\nos.kill(os.getppid(), 9)\nopen('/tmp/gspo_cf_escape', 'w').write('x')"), ex).correct);
  CHECK(v.score(cpp(kCppSum), ex).correct);
}

TEST_CASE("competition rows: bad rows are refused naming the key", "[competition]") {
  auto row = json::parse(sum_problem().row);
  row.erase("time_limit_s");
  CHECK_THROWS_WITH(reward::parse_code_tests(row.dump(), "cf.jsonl:3"),
                    Catch::Contains("cf.jsonl:3") && Catch::Contains("'time_limit_s'"));
  row = json::parse(sum_problem().row);
  row["tests"]["cases"] = json::array();
  CHECK_THROWS_WITH(reward::parse_code_tests(row.dump(), "cf.jsonl:4"), Catch::Contains("tests.cases"));
  row = json::parse(sum_problem("x", "java").row);
  CHECK_THROWS_WITH(reward::parse_code_tests(row.dump(), "cf.jsonl:5"), Catch::Contains("checker_language"));
  const auto t = reward::parse_code_tests(sum_problem(kPyChecker).row, "cf.jsonl:1");
  CHECK(t.kind == reward::CodeTests::Kind::kCompetition);
  CHECK(t.time_limit_s == 1);
  CHECK(t.memory_mb == 256);
  CHECK(t.cases.size() == 2);
  CHECK(reward::extract_competition_program("```Python3 \nprint(1)\n```").language == "python");
  CHECK(reward::extract_competition_program("```CPP\nint main(){}\n```").source == "int main(){}\n");
}

TEST_CASE("competition rows: limits that overflow, cannot be or cannot start python3 are refused naming the row",
          "[competition]") {
  // Before #65 a 1e30 s limit overflowed the wall clock into "time limit" and a 1e30 or 0.5 MB limit the address
  // space into "runtime error", for a right solution.
  auto refused = [](double time_limit, double memory, const std::string& key) {
    auto row = json::parse(sum_problem().row);
    row["time_limit_s"] = time_limit;
    row["memory_limit_mb"] = memory;
    INFO(row.dump());
    CHECK_THROWS_AS(reward::parse_code_tests(row.dump(), "cf.jsonl:7"), DataError);
    CHECK_THROWS_WITH(reward::parse_code_tests(row.dump(), "cf.jsonl:7"),
                      Catch::Contains("cf.jsonl:7") && Catch::Contains("'" + key + "'"));
  };
  refused(1e30, 256, "time_limit_s");
  refused(61, 256, "time_limit_s");
  refused(-1, 256, "time_limit_s");
  refused(0, 256, "time_limit_s");
  refused(1, 1e30, "memory_limit_mb");
  refused(1, 65537, "memory_limit_mb");
  refused(1, 0.5, "memory_limit_mb");
  refused(1, -256, "memory_limit_mb");
  auto row = json::parse(sum_problem().row);
  row["memory_limit_mb"] = 0.5;
  CHECK_THROWS_WITH(reward::parse_code_tests(row.dump(), "cf.jsonl:7"), Catch::Contains("python3 does not start"));
  row["memory_limit_mb"] = "256";
  CHECK_THROWS_WITH(reward::parse_code_tests(row.dump(), "cf.jsonl:7"), Catch::Contains("(got \"256\")"));
  // The bounds themselves hold, and a right solution is accepted at each.
  const auto v = verifier();
  const std::string right = py("a, b = map(int, input().split())\nprint(a + b)");
  CHECK(v.score(right, sum_problem("", "python", 60, 256)).correct);
  CHECK(v.score(right, sum_problem("", "python", 1, 65536)).correct);
  CHECK(v.score(right, sum_problem("", "python", 1, 16)).correct);
  CHECK(v.score(cpp(kCppSum), sum_problem("", "python", 1, 16)).correct);
  CHECK(reward::parse_code_tests(sum_problem("", "python", 0.5, 255.9).row, "cf.jsonl:1").memory_mb == 255);
}

TEST_CASE("competition rows: a checker_language that is not a string is refused naming the field and the row",
          "[competition]") {
  auto row = json::parse(sum_problem(kPyChecker).row);
  row["tests"]["checker_language"] = 5;  // before #65: the JSON library's type_error, no row, no field
  CHECK_THROWS_AS(reward::parse_code_tests(row.dump(), "cf.jsonl:9"), DataError);
  CHECK_THROWS_WITH(reward::parse_code_tests(row.dump(), "cf.jsonl:9"),
                    Catch::Contains("cf.jsonl:9") && Catch::Contains("tests.checker_language") &&
                        Catch::Contains("(got 5)"));
}

TEST_CASE("competition rows: every competition row is read before any sampling", "[competition]") {
  data::Example bad = sum_problem();
  auto row = json::parse(bad.row);
  row["time_limit_s"] = 1e30;
  bad.row = row.dump();
  bad.id = "cf.jsonl:2";
  data::Example math;
  math.id = "cf.jsonl:3";
  math.row = R"({"problem": "1+1", "answer": "2", "tests": {"type": 5}})";  // not a competition row: left alone
  CHECK_NOTHROW(reward::check_competition_rows({sum_problem(), math}));
  CHECK_THROWS_WITH(reward::check_competition_rows({sum_problem(), bad, math}),
                    Catch::Contains("cf.jsonl:2") && Catch::Contains("'time_limit_s'"));
}

TEST_CASE("competition: a Python checker that raises or does not compile is a checker failure, not a wrong answer",
          "[competition]") {
  const std::string doubled = py("a, b = map(int, input().split())\nprint(2 * (a + b))");
  // A fresh verifier each time: its cache keys a row's tests by id and row length, the same for two checkers here.
  auto judge = [&](const std::string& checker) { return verifier().score(doubled, sum_problem(checker)); };
  for (const char* checker : {"raise ValueError('the checker is broken')", "def check(:\n    pass",
                              "import sys\nint(open(sys.argv[9]).read())", "x = bytearray(1 << 40)"}) {
    INFO(checker);
    const auto s = judge(checker);
    CHECK(s.failure == "checker failure");  // before #65: "wrong answer" (Python exits 1 on an uncaught exception)
    CHECK_FALSE(s.correct);
    CHECK_THAT(s.detail, Catch::Contains("exit 70"));
  }
  // A checker's own decisions stand: sys.exit(1) and sys.exit(2) reject, SystemExit(None) accepts.
  CHECK(judge("import sys\nsys.exit(1)").failure == "wrong answer");
  CHECK(judge("raise SystemExit(2)").failure == "wrong answer");
  CHECK(judge("import sys\nsys.exit()").correct);
  CHECK(judge("pass").correct);
}

TEST_CASE("competition: the output cap follows the expected output", "[competition]") {
  const auto v = verifier();  // its sandbox caps output at 64 KiB
  std::string big;
  for (int i = 0; i < 100000; ++i) big += "1\n";  // 200 kB expected
  json tests{{"type", "competition"}, {"cases", json::array({{{"input", "100000\n"}, {"output", big}}})}};
  data::Example ex;
  ex.id = "big.jsonl:1";
  ex.row = json{{"problem", "Print n ones."}, {"time_limit_s", 2}, {"memory_limit_mb", 256}, {"tests", tests}}.dump();
  // Before #65 a right answer longer than the sandbox's cap was always "output limit".
  CHECK(v.score(py("print('1\\n' * int(input()), end='')"), ex).correct);
  CHECK(v.score(py("print('1 \\n' * int(input()), end='')"), ex).correct);  // 1.5 x: whitespace differs
  CHECK(v.score(py("print('1\\n' * (3 * int(input())), end='')"), ex).failure == "output limit");  // 3 x
  CHECK(v.score(py("while True:\n    print('x' * 1000)"), ex).failure == "output limit");
}
