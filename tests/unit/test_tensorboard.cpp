// The TensorBoard event writer's framing (io/tensorboard.h): CRC-32C against its published check value and
// TensorFlow's masking; the records as a reader walks them. The events' contents are checked end to end by the
// tensorboard package's own reader (tests/cli/check_tensorboard.py, ctest tensorboard_tests).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "gspo/core/fs.h"
#include "gspo/io/tensorboard.h"

using namespace gspo;

TEST_CASE("CRC-32C: the check value of '123456789' and TensorFlow's mask", "[tensorboard]") {
  const std::string s = "123456789";
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  CHECK(io::crc32c(p, s.size()) == 0xE3069283u);  // the Castagnoli polynomial's published check value
  const uint32_t c = 0xE3069283u;
  CHECK(io::masked_crc32c(p, s.size()) == ((c >> 15) | (c << 17)) + 0xA282EAD8u);
  CHECK(io::crc32c(p, 0) == 0);
}

TEST_CASE("event records: length, its CRC, the event, its CRC, one after another", "[tensorboard]") {
  const std::string dir = "/tmp/gspo_tb_" + std::to_string(getpid());
  core::remove_all(dir);
  std::string path;
  {
    io::EventWriter w(dir);
    w.scalar("loss", 0.5, 3);
    w.metrics_line(R"({"step": 4, "reward_mean": 0.25, "per_layer": [1, 2], "name": "x", "flag": true})");
    path = w.path();
  }
  std::ifstream in(path, std::ios::binary);
  const std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = 0;
  int records = 0;
  while (at < b.size()) {
    REQUIRE(at + 12 <= b.size());
    uint64_t n = 0;
    uint32_t len_crc = 0, data_crc = 0;
    std::memcpy(&n, b.data() + at, 8);
    std::memcpy(&len_crc, b.data() + at + 8, 4);
    CHECK(len_crc == io::masked_crc32c(reinterpret_cast<const uint8_t*>(b.data() + at), 8));
    REQUIRE(at + 12 + n + 4 <= b.size());
    std::memcpy(&data_crc, b.data() + at + 12 + n, 4);
    CHECK(data_crc == io::masked_crc32c(reinterpret_cast<const uint8_t*>(b.data() + at + 12), n));
    at += 12 + n + 4;
    ++records;
  }
  CHECK(at == b.size());
  CHECK(records == 1 + 1 + 3);  // the file version, loss, then reward_mean and per_layer/0, /1 (no string or bool)
  core::remove_all(dir);
}
