// Micro-batch grouping under a padded-token budget (algorithm.micro_batch_tokens): the budget holds, a row too long
// for it runs alone, every row appears once, and sorting by length pads far less than consecutive parts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include "gspo/train/minibatch.h"

using namespace gspo;
using train::padded_tokens;

namespace {

// 64 response lengths with a long tail: most are short, a few run to the cap (as sampled lengths do). Row r has
// length lengths[r]; the order is scrambled so that consecutive rows mix short and long ones.
std::vector<int64_t> long_tailed() {
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < 64; ++i) {
    const int64_t k = (i * 37) % 64;  // a fixed permutation of 0..63
    lengths.push_back(k < 48 ? 3 + k % 10 : k < 60 ? 20 + 5 * (k - 48) : 200 + 20 * (k - 60));
  }
  return lengths;
}

std::vector<int64_t> iota_rows(size_t n) {
  std::vector<int64_t> rows(n);
  std::iota(rows.begin(), rows.end(), 0);
  return rows;
}

int64_t total_slots(const std::vector<std::vector<int64_t>>& parts, const std::vector<int64_t>& lengths, int64_t P) {
  int64_t s = 0;
  for (const auto& p : parts) s += padded_tokens(p, lengths, P);
  return s;
}

void check_each_row_once(const std::vector<std::vector<int64_t>>& parts, std::vector<int64_t> rows) {
  std::vector<int64_t> seen;
  for (const auto& p : parts) {
    CHECK_FALSE(p.empty());
    seen.insert(seen.end(), p.begin(), p.end());
  }
  std::sort(seen.begin(), seen.end());
  std::sort(rows.begin(), rows.end());
  CHECK(seen == rows);
}

}  // namespace

TEST_CASE("token-budget micro-batches respect the budget, isolate a too-long row and hold every row once",
          "[minibatch]") {
  const auto lengths = long_tailed();
  const int64_t P = 16, budget = 256;
  // A subset of the rows in a shuffled order, as a mini-batch's share of a rank arrives.
  std::vector<int64_t> rows;
  for (int64_t r = 63; r >= 0; r -= 1)
    if (r % 5 != 0) rows.push_back(r);
  const auto parts = train::split_micro_tokens(rows, lengths, P, 0, budget);
  check_each_row_once(parts, rows);
  int alone = 0;
  for (const auto& p : parts) {
    const int64_t longest = *std::max_element(p.begin(), p.end(), [&](int64_t a, int64_t b) {
      return lengths[a] < lengths[b];
    });
    if (P + lengths[longest] > budget) {  // row 19, 260 tokens: over the budget on its own
      CHECK(p.size() == 1);
      ++alone;
    } else {
      CHECK(padded_tokens(p, lengths, P) <= budget);
    }
  }
  CHECK(alone > 0);

  // micro_batch_size as well: both limits hold.
  const auto capped = train::split_micro_tokens(rows, lengths, P, 3, budget);
  check_each_row_once(capped, rows);
  for (const auto& p : capped) {
    CHECK(p.size() <= 3);
    if (p.size() > 1) CHECK(padded_tokens(p, lengths, P) <= budget);
  }

  // A budget below any row: one row per part. No rows: no parts.
  CHECK(train::split_micro_tokens(rows, lengths, P, 0, 1).size() == rows.size());
  CHECK(train::split_micro_tokens({}, lengths, P, 0, budget).empty());
  // Length 0 counts as one column, as slice_rows keeps one.
  CHECK(padded_tokens({0, 1}, std::vector<int64_t>{0, 0}, 4) == 2 * 5);
}

TEST_CASE("sorting by length pads far less than consecutive parts on long-tailed lengths", "[minibatch]") {
  const auto lengths = long_tailed();
  const auto rows = iota_rows(lengths.size());
  const int64_t P = 16;
  int64_t real = 0;
  for (int64_t r : rows) real += P + lengths[r];
  for (int64_t budget : {300, 600, 1200}) {
    INFO("budget " << budget);
    const auto packed = train::split_micro_tokens(rows, lengths, P, 0, budget);
    // The unsorted split with the same number of parts.
    const int64_t per = (static_cast<int64_t>(rows.size()) + packed.size() - 1) / packed.size();
    const auto plain = train::split_micro(rows, per);
    REQUIRE(plain.size() <= packed.size());
    const double pad_packed = 1.0 - static_cast<double>(real) / total_slots(packed, lengths, P);
    const double pad_plain = 1.0 - static_cast<double>(real) / total_slots(plain, lengths, P);
    CHECK(pad_packed < 0.5 * pad_plain);
    CHECK(pad_packed < 0.25);
  }
}

TEST_CASE("plan_micro: a token budget of 0 is micro_batch_size's split, unchanged", "[minibatch]") {
  const auto lengths = long_tailed();
  const std::vector<int64_t> rows{5, 3, 40, 7, 61, 2, 9};
  CHECK(train::plan_micro(rows, lengths, 8, 3, 0) == train::split_micro(rows, 3));
  CHECK(train::plan_micro(rows, lengths, 8, 0, 0) == train::split_micro(rows, 0));
  CHECK(train::plan_micro(rows, lengths, 8, 3, 100) == train::split_micro_tokens(rows, lengths, 8, 3, 100));
}

// The cut is the least padded slots + budget/16 per part over every way to cut the sorted order into runs within the
// limits: checked against all 2^(n-1) cuts of small random inputs (the reference enumerates, the code does a DP).
TEST_CASE("token-budget parts are the least-cost cut of the sorted rows (brute force over every cut)", "[minibatch]") {
  std::mt19937 rng(7);
  const int64_t P = 5;
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = 1 + rng() % 10;
    std::vector<int64_t> lengths(n);
    for (auto& l : lengths) l = rng() % 3 == 0 ? 40 + static_cast<int64_t>(rng() % 60) : static_cast<int64_t>(rng() % 8);
    const int64_t budget = 20 + static_cast<int64_t>(rng() % 300), max_rows = rng() % 3 == 0 ? 3 : 0;
    const auto rows = iota_rows(n);
    auto cost = [&](const std::vector<std::vector<int64_t>>& parts) {
      return total_slots(parts, lengths, P) + static_cast<int64_t>(parts.size()) * std::max<int64_t>(1, budget / 16);
    };
    std::vector<int64_t> order = rows;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return std::max<int64_t>(1, lengths[a]) > std::max<int64_t>(1, lengths[b]);
    });
    int64_t least = std::numeric_limits<int64_t>::max();
    for (uint32_t mask = 0; mask < (1u << (n - 1)); ++mask) {  // bit k set: a cut after order[k]
      std::vector<std::vector<int64_t>> parts(1);
      for (size_t k = 0; k < n; ++k) {
        parts.back().push_back(order[k]);
        if (k + 1 < n && (mask >> k & 1u)) parts.emplace_back();
      }
      bool ok = true;
      for (const auto& p : parts)
        if (p.size() > 1 && (padded_tokens(p, lengths, P) > budget || (max_rows > 0 && static_cast<int64_t>(p.size()) > max_rows)))
          ok = false;
      if (ok) least = std::min(least, cost(parts));
    }
    const auto parts = train::split_micro_tokens(rows, lengths, P, max_rows, budget);
    INFO("trial " << trial << ", " << n << " rows, budget " << budget);
    check_each_row_once(parts, rows);
    CHECK(cost(parts) == least);
  }
  // One long row among short ones: the short rows do not pad to its length when that costs more than a pass.
  const std::vector<int64_t> lengths{64, 2, 2, 2, 2, 2};
  const auto parts = train::split_micro_tokens(iota_rows(6), lengths, 4, 0, 512);
  REQUIRE(parts.size() == 2);
  CHECK(parts[0] == std::vector<int64_t>{0});
}
