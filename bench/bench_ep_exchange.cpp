// The rollout's exchange per MoE layer and decode step under expert parallelism (#37 item 3), on Gloo: which of the two
// patterns costs less for a decode batch of B rows of hidden H a rank, E ranks as threads of this process on loopback:
//   all-to-all: the (token, choice) pairs sorted by expert, their counts exchanged, the rows sent to the experts'
//     owners and the results sent back (parallel::ExpertRoute: dispatch + combine; uneven splits, so the counts must
//     reach the host every layer of every step, which rules out CUDA graphs);
//   all-gather + reduce-scatter: every rank gathers every rank's rows (fixed [E B, H]), runs its experts on the rows
//     routed to them, and the partial outputs are summed back to their rows' ranks (fixed shapes, graph-friendly:
//     vLLM's default expert-parallel backend).
// The experts' own compute is left out (the same work either way): each pattern moves the rows and brings them back.
// Prints the median seconds per exchange over --reps after a warm-up, and the bytes each rank sends.
// usage: bench_ep_exchange [--ranks 2,4] [--rows 1,8,64,256] [--hidden 2048] [--top-k 8] [--experts 128] [--reps 50]
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_common.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/expert_parallel.h"
#include "unit/two_ranks.h"

using namespace gspo;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Result {
  double a2a = 0, agrs = 0;
};

Result measure(int E, int64_t B, int64_t H, int64_t k, int64_t n, int reps) {
  std::vector<Result> per(E);
  const auto errors = test::run_ranks(E, [&](parallel::Comm& comm, int rank) {
    auto g = at::make_generator<at::CPUGeneratorImpl>(100 + rank);
    const auto x = torch::randn({B, H}, g);
    const auto experts = std::get<1>(torch::rand({B, n}, g).topk(k, -1));  // k distinct experts a row, uniform
    const auto w = torch::full({B, k}, 1.0 / static_cast<double>(k));
    std::vector<double> a2a, agrs;
    for (int i = 0; i < reps + 1; ++i) {
      comm.barrier("bench");
      auto t0 = std::chrono::steady_clock::now();
      const parallel::ExpertRoute route(experts, n, comm);
      const auto y = route.combine(route.dispatch(x), w);
      auto t1 = std::chrono::steady_clock::now();
      comm.barrier("bench");
      auto t2 = std::chrono::steady_clock::now();
      auto all = comm.all_gather(x);  // [E B, H]
      torch::Tensor mine = torch::empty({B * H});
      comm.reduce_scatter(all.reshape({-1}), mine);  // (the partial outputs summed back, here the rows themselves)
      auto t3 = std::chrono::steady_clock::now();
      if (i == 0 || y.size(0) != B) continue;  // warm-up
      a2a.push_back(std::chrono::duration<double>(t1 - t0).count());
      agrs.push_back(std::chrono::duration<double>(t3 - t2).count());
    }
    per[rank] = {median(a2a), median(agrs)};
  });
  for (const auto& e : errors)
    if (!e.empty()) {
      std::fprintf(stderr, "bench_ep_exchange: %s\n", e.c_str());
      std::exit(1);
    }
  Result worst;
  for (const auto& r : per) worst = {std::max(worst.a2a, r.a2a), std::max(worst.agrs, r.agrs)};
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> ranks{2, 4}, rows{1, 8, 64, 256};
  int64_t H = 2048, k = 8, n = 128, reps = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--ranks") ranks = bench::parse_list(v);
    else if (a == "--rows") rows = bench::parse_list(v);
    else if (a == "--hidden") H = std::stoll(v);
    else if (a == "--top-k") k = std::stoll(v);
    else if (a == "--experts") n = std::stoll(v);
    else if (a == "--reps") reps = std::stoll(v);
    else {
      std::fprintf(stderr, "bench_ep_exchange: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  torch::set_num_threads(1);
  std::printf("float32 rows of hidden %lld, top-%lld of %lld experts; median of %lld exchanges (the slowest rank)\n",
              static_cast<long long>(H), static_cast<long long>(k), static_cast<long long>(n),
              static_cast<long long>(reps));
  std::printf("| ranks | rows a rank | all-to-all ms | all-gather + reduce-scatter ms | MB a rank sends: a2a / ag+rs |\n");
  std::printf("|---|---|---|---|---|\n");
  for (int64_t E : ranks)
    for (int64_t B : rows) {
      const auto r = measure(static_cast<int>(E), B, H, k, n, static_cast<int>(reps));
      const double row = static_cast<double>(H) * 4 / 1e6, out = static_cast<double>(E - 1) / static_cast<double>(E);
      std::printf("| %lld | %lld | %.3f | %.3f | %.2f / %.2f |\n", static_cast<long long>(E), static_cast<long long>(B),
                  1e3 * r.a2a, 1e3 * r.agrs, 2 * k * B * row * out, 2 * (E - 1) * B * row);
    }
  return 0;
}
