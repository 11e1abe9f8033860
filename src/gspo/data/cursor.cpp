#include "gspo/data/cursor.h"

#include <cmath>
#include <string>

#include "gspo/core/error.h"
#include "gspo/data/rng.h"

namespace gspo::data {
namespace {
// Dataset i's own shuffle stream: the one dataset (i = 0) keeps the stream a single dataset has always had.
std::vector<int64_t> one_dataset(int64_t size) {
  if (size <= 0) throw DataError("dataset has no examples");
  return {size};
}

uint64_t part_seed(uint64_t seed, size_t i) {
  if (i == 0) return seed;
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(i);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
}  // namespace

Cursor::Cursor(int64_t size, bool shuffle, uint64_t seed) : Cursor(one_dataset(size), {1.0}, shuffle, seed) {}

Cursor::Cursor(const std::vector<int64_t>& sizes, const std::vector<double>& weights, bool shuffle, uint64_t seed)
    : shuffle_(shuffle) {
  if (sizes.empty() || sizes.size() != weights.size())
    throw DataError("a dataset mix needs one weight per dataset (" + std::to_string(sizes.size()) + " datasets, " +
                    std::to_string(weights.size()) + " weights)");
  double sum = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] <= 0) throw DataError("dataset " + std::to_string(i) + " of the mix has no examples");
    if (!(weights[i] > 0)) throw DataError("dataset " + std::to_string(i) + " of the mix has weight <= 0");
    Part p;
    p.offset = total_;
    p.size = sizes[i];
    p.weight = weights[i];
    p.seed = part_seed(seed, i);
    parts_.push_back(std::move(p));
    total_ += sizes[i];
    sum += weights[i];
  }
  if (std::abs(sum - 1.0) > 1e-6) throw DataError("the weights of a dataset mix sum to " + std::to_string(sum) + ", not 1");
}

size_t Cursor::pick() const {
  const size_t k = parts_.size();
  if (k == 1) return 0;
  const double delta = 1.0 / static_cast<double>(2 * k - 2);
  const double n = static_cast<double>(draws_ + 1);
  size_t best = k;
  double best_key = 0;
  for (size_t i = 0; i < k; ++i) {
    const Part& p = parts_[i];
    if (n * p.weight - static_cast<double>(p.taken) < delta - 1e-12) continue;
    const double key = (static_cast<double>(p.taken) + 1 - delta) / p.weight;
    if (best == k || key < best_key) best = i, best_key = key;
  }
  if (best < k) return best;
  // Not reached in exact arithmetic (Tijdeman: a candidate always exists); rounding: the dataset furthest behind.
  for (size_t i = 0; i < k; ++i) {
    const double lag = n * parts_[i].weight - static_cast<double>(parts_[i].taken);
    if (best == k || lag > best_key) best = i, best_key = lag;
  }
  return best;
}

int64_t Cursor::take(Part& p) {
  const int64_t epoch = p.taken / p.size;
  if (epoch != p.order_epoch) {
    if (shuffle_) {
      p.order = permutation(p.size, p.seed * 1000003ULL + static_cast<uint64_t>(epoch));
    } else if (p.order.empty()) {
      p.order.resize(p.size);
      for (int64_t i = 0; i < p.size; ++i) p.order[i] = i;
    }
    p.order_epoch = epoch;
  }
  return p.offset + p.order[p.taken++ % p.size];
}

std::vector<int64_t> Cursor::next(int64_t count) {
  std::vector<int64_t> out;
  out.reserve(count);
  for (int64_t c = 0; c < count; ++c) {
    out.push_back(take(parts_[pick()]));
    ++draws_;
  }
  return out;
}

int64_t Cursor::epoch() const { return draws_ == 0 ? 0 : (draws_ - 1) / total_; }
int64_t Cursor::position() const { return draws_ - epoch() * total_; }

std::vector<int64_t> Cursor::taken() const {
  std::vector<int64_t> out;
  for (const auto& p : parts_) out.push_back(p.taken);
  return out;
}

void Cursor::restore(int64_t epoch, int64_t position) {
  if (epoch < 0 || position < 0 || position > total_)
    throw DataError("checkpoint data position (epoch " + std::to_string(epoch) + ", position " +
                    std::to_string(position) + ") does not fit a dataset of " + std::to_string(total_) + " examples");
  const int64_t target = epoch * total_ + position;
  if (target < draws_) {  // back: counted again from the start
    draws_ = 0;
    for (auto& p : parts_) p.taken = 0;
  }
  if (parts_.size() == 1) {
    parts_[0].taken = target;
    draws_ = target;
    return;
  }
  // Forward to `target` draws: the counts replayed (O(draws x datasets); row orders are built when rows are taken).
  for (; draws_ < target; ++draws_) ++parts_[pick()].taken;
}

}  // namespace gspo::data
