// Resumable position in a dataset, or in several mixed by weight (data.mix): epochs of (optionally shuffled) order.
// Everything is a pure function of (seed, the number of prompts drawn so far), so the state to save is two numbers.
//
// The mixing rule: the k datasets are drawn from in Tijdeman's sequence for weights w_i (sum 1): at the n-th draw,
// among the datasets with n * w_i - taken_i >= 1/(2k-2), the one with the smallest (taken_i + 1 - 1/(2k-2)) / w_i
// (ties: the first listed). After any n draws every dataset has given floor or ceil of n * w_i prompts (|taken_i -
// n * w_i| <= 1 - 1/(2k-2)), so every step's batch holds the mix's shares to within one prompt each. Within a dataset
// rows come in its own epoch order (shuffled per epoch when `shuffle`), so a small dataset with a large weight repeats
// and a large one with a small weight is sampled without repeats until its epoch ends.
#pragma once
#include <cstdint>
#include <vector>

namespace gspo::data {

class Cursor {
 public:
  // One dataset of `size` rows.
  Cursor(int64_t size, bool shuffle, uint64_t seed);
  // Several: dataset i is the rows [offset_i, offset_i + sizes[i]) of the example list (offsets by order), drawn with
  // weight weights[i] (positive, summing to 1 within 1e-6). DataError for an empty dataset or a bad weight.
  Cursor(const std::vector<int64_t>& sizes, const std::vector<double>& weights, bool shuffle, uint64_t seed);

  // The next `count` example indices, wrapping into new epochs as needed.
  std::vector<int64_t> next(int64_t count);
  // Saved state: the draws so far as epochs of the whole list (all datasets' rows) and a position in the last one.
  // One dataset: its epoch and position in it; the epoch changes when the next row is drawn, not before.
  int64_t epoch() const;
  int64_t position() const;
  void restore(int64_t epoch, int64_t position);
  // Rows drawn from each dataset so far (one entry per dataset).
  std::vector<int64_t> taken() const;

 private:
  struct Part {
    int64_t offset = 0, size = 0;
    double weight = 1;
    uint64_t seed = 0;
    int64_t taken = 0;
    int64_t order_epoch = -1;  // the epoch `order` was built for
    std::vector<int64_t> order;
  };
  size_t pick() const;  // the dataset the next draw takes from
  int64_t take(Part& p);
  int64_t total_ = 0;
  int64_t draws_ = 0;
  bool shuffle_;
  std::vector<Part> parts_;
};

}  // namespace gspo::data
