// Verifier throughput: math answers graded per second, and sandboxed code programs per second with 1 worker and
// with N workers (the speed-up is the comparison). Usage: bench_verifiers [N_WORKERS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

#include "gspo/reward/code/code.h"
#include "gspo/reward/math/math.h"

using namespace gspo;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const int64_t workers = argc > 1 ? std::atoll(argv[1]) : std::max(2u, std::thread::hardware_concurrency());
  // Math: a mix of boxed, "answer is" and last-number responses against varied references, then the kinds of
  // issue #34 (relations, equations, matrices, functions, units in text, answers in prose).
  const char* responses[] = {"so \\boxed{\\frac{3}{4}}", "The answer is 1,000.", "we get (1, -2) as the point",
                             "\\boxed{2\\sqrt{3}}", "The final answer is $50\\%$.", "\\boxed{[1, 2) \\cup (3, \\infty)}",
                             "Therefore \\boxed{x \\geq 5}.", "The line is $y=-\\frac{1}{2}x+\\frac{3}{4}$.",
                             "\\boxed{\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}}", "\\boxed{\\tan^2(y)+1}",
                             "The trip is $\\boxed{125\\textnormal{ miles}}$.", "Solving, the ordered pair is $(7, 6)$."};
  const char* refs[] = {"0.75", "1000", "(1,-2)", "\\sqrt{12}", "0.5", "(3,\\infty)\\cup[1,2)", "x >= 5", "2x+4y-3=0",
                        "\\left[\\begin{array}{cc}1&2\\\\3&4\\end{array}\\right]", "\\sec^2(y)", "125", "(7, 6)"};
  constexpr int kKinds = sizeof(responses) / sizeof(responses[0]);
  reward::MathVerifier mv;
  std::vector<std::string> rs;
  std::vector<data::Example> exs;
  for (int i = 0; i < 6000; ++i) {
    rs.push_back(responses[i % kKinds]);
    exs.push_back({"b", "", refs[i % kKinds], "", "", ""});
  }
  std::vector<const data::Example*> ptrs;
  for (auto& e : exs) ptrs.push_back(&e);
  auto t0 = Clock::now();
  auto scores = reward::score_all(mv, rs, ptrs, 1);
  double s1 = std::chrono::duration<double>(Clock::now() - t0).count();
  int correct = 0;
  for (auto& s : scores) correct += s.correct;
  t0 = Clock::now();
  reward::score_all(mv, rs, ptrs, workers);
  double sn = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("math verifier: %zu answers (%d judged correct)\n  1 worker   %10.0f answers/s\n  %lld workers %9.0f answers/s (x%.2f)\n",
              rs.size(), correct, rs.size() / s1, static_cast<long long>(workers), rs.size() / sn, s1 / sn);

  // Long responses (a 62 KB chain of thought of 800 steps with math spans, ~15k tokens): answer boxed at the end,
  // in prose at the end, and none; each graded 50 times.
  std::string steps;
  for (int i = 0; i < 800; ++i)
    steps += "Step " + std::to_string(i) + ": we have $x_" + std::to_string(i) + " = \\frac{" + std::to_string(i) +
             "}{7}$, so the total is 1,234 and y = " + std::to_string(i * 3) + ".\n";
  const data::Example long_ex{"l", "", "42", "", "", ""};
  std::printf("math verifier, long responses (%zu bytes):\n", steps.size());
  for (const auto& [what, text] : {std::pair<const char*, std::string>{"boxed", steps + "So $\\boxed{42}$."},
                                   {"prose", steps + "Therefore the answer is 42."}, {"none", steps}}) {
    t0 = Clock::now();
    int ok = 0;
    for (int k = 0; k < 50; ++k) ok += mv.score(text, long_ex).correct;
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("  %-6s %8.3f ms per response (%d/50 correct)\n", what, 1e3 * s / 50, ok);
  }

  // Code: 32 stdio programs (3 tests each, all-or-nothing) in the sandbox.
  const std::string row = R"({"tests": {"type": "stdio", "cases": [{"input": "1 2", "output": "3"},
      {"input": "5 6", "output": "11"}, {"input": "0 0", "output": "0"}]}})";
  reward::CodeOptions o;
  reward::CodeVerifier cv(o);
  std::vector<std::string> progs(32, "a, b = map(int, input().split())\nprint(a + b)\n");
  std::vector<data::Example> cex(32, data::Example{"c", "", "", row, "", ""});
  std::vector<const data::Example*> cptr;
  for (auto& e : cex) cptr.push_back(&e);
  std::printf("code verifier: %zu programs x 3 tests, sandbox mode %s\n", progs.size(),
              reward::sandbox_mode_name(reward::default_sandbox_mode()));
  double base = 0;
  for (int64_t w : {int64_t{1}, workers}) {
    t0 = Clock::now();
    auto cs = reward::score_all(cv, progs, cptr, w);
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    int ok = 0;
    for (auto& x : cs) ok += x.correct;
    if (w == 1) base = s;
    std::printf("  %lld worker(s) %8.1f programs/s  (%.1f test runs/s, %d/%zu passed, x%.2f)\n", static_cast<long long>(w),
                progs.size() / s, 3 * progs.size() / s, ok, progs.size(), base / s);
  }
  return 0;
}
