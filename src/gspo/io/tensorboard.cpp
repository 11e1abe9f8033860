#include "gspo/io/tensorboard.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gspo/core/error.h"
#include "gspo/core/fs.h"

namespace gspo::io {
namespace {

std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected Castagnoli polynomial
    t[i] = c;
  }
  return t;
}

// Protocol-buffer wire format: a field's key is (number << 3 | wire type); 0 varint, 1 64-bit, 2 bytes, 5 32-bit.
void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void key(std::string& out, int field, int type) { varint(out, static_cast<uint64_t>(field) << 3 | type); }
void bytes_field(std::string& out, int field, const std::string& b) {
  key(out, field, 2);
  varint(out, b.size());
  out += b;
}
void double_field(std::string& out, int field, double v) {
  key(out, field, 1);
  char b[8];
  std::memcpy(b, &v, 8);  // little-endian hosts (x86, ARM): the wire's order
  out.append(b, 8);
}
void float_field(std::string& out, int field, float v) {
  key(out, field, 5);
  char b[4];
  std::memcpy(b, &v, 4);
  out.append(b, 4);
}
void int_field(std::string& out, int field, int64_t v) {
  key(out, field, 0);
  varint(out, static_cast<uint64_t>(v));
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Event: wall_time = 1 (double), step = 2 (int64), file_version = 3 (string), summary = 5 (Summary).
std::string event(int64_t step, const std::string* summary, const std::string* file_version) {
  std::string e;
  double_field(e, 1, now_seconds());
  if (step != 0) int_field(e, 2, step);
  if (file_version) bytes_field(e, 3, *file_version);
  if (summary) bytes_field(e, 5, *summary);
  return e;
}

}  // namespace

uint32_t crc32c(const uint8_t* data, size_t n) {
  static const auto table = make_table();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ data[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const uint8_t* data, size_t n) {
  const uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

EventWriter::EventWriter(const std::string& dir) {
  core::ensure_dir(dir);
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  path_ = dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(now_seconds())) + "." + host + ".gspo";
  f_ = std::fopen(path_.c_str(), "ab");
  if (!f_) throw IoError("cannot create the TensorBoard event file '" + path_ + "': " + std::strerror(errno));
  const std::string version = "brain.Event:2";
  record(event(0, nullptr, &version));
  flush();
}

EventWriter::~EventWriter() {
  if (f_) std::fclose(f_);
}

void EventWriter::record(const std::string& e) {
  std::string r;
  const uint64_t n = e.size();
  char len[8];
  std::memcpy(len, &n, 8);
  r.append(len, 8);
  auto put32 = [&](uint32_t v) {
    char b[4];
    std::memcpy(b, &v, 4);
    r.append(b, 4);
  };
  put32(masked_crc32c(reinterpret_cast<const uint8_t*>(len), 8));
  r += e;
  put32(masked_crc32c(reinterpret_cast<const uint8_t*>(e.data()), e.size()));
  if (std::fwrite(r.data(), 1, r.size(), f_) != r.size())
    throw IoError("cannot write the TensorBoard event file '" + path_ + "': " + std::strerror(errno));
}

// Summary { value = 1: Value { tag = 1, simple_value = 2 (float) } }.
void EventWriter::scalar(const std::string& tag, double value, int64_t step) {
  std::string v, s;
  bytes_field(v, 1, tag);
  float_field(v, 2, static_cast<float>(value));
  bytes_field(s, 1, v);
  record(event(step, &s, nullptr));
}

// A text summary as TensorBoard's text plugin reads it: Value { tag = 1, metadata = 9: SummaryMetadata { plugin_data
// = 1: PluginData { plugin_name = 1: "text" } }, tensor = 8: TensorProto { dtype = 1: DT_STRING (7), tensor_shape = 2:
// {} (a scalar), string_val = 8 } }.
void EventWriter::text(const std::string& tag, const std::string& text, int64_t step) {
  std::string plugin, meta, tensor, v, s;
  bytes_field(plugin, 1, "text");
  bytes_field(meta, 1, plugin);
  int_field(tensor, 1, 7);
  bytes_field(tensor, 2, "");
  bytes_field(tensor, 8, text);
  bytes_field(v, 1, tag);
  bytes_field(v, 9, meta);
  bytes_field(v, 8, tensor);
  bytes_field(s, 1, v);
  record(event(step, &s, nullptr));
  flush();
}

void EventWriter::metrics_line(const std::string& json_line) {
  const auto j = nlohmann::json::parse(json_line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) return;
  const int64_t step = j["step"].get<int64_t>();
  for (const auto& [k, v] : j.items()) {
    if (k == "step") continue;
    if (v.is_number()) {
      scalar(k, v.get<double>(), step);
    } else if (v.is_array()) {
      for (size_t i = 0; i < v.size(); ++i)
        if (v[i].is_number()) scalar(k + "/" + std::to_string(i), v[i].get<double>(), step);
    } else if (v.is_object()) {  // per name (reward_by_source): one tag a key
      for (const auto& [name, x] : v.items())
        if (x.is_number()) scalar(k + "/" + name, x.get<double>(), step);
    }
  }
  flush();
}

void EventWriter::flush() {
  if (std::fflush(f_) != 0)
    throw IoError("cannot write the TensorBoard event file '" + path_ + "': " + std::strerror(errno));
}

std::unique_ptr<EventWriter> open_run_events(const std::string& setting, const std::string& run_dir,
                                             const std::string& metrics_path, const std::string& config_yaml) {
  if (setting.empty() || setting == "false") return nullptr;
  const std::string dir = setting == "true" ? run_dir + "/tensorboard" : setting;
  const std::string suffix = ".gspo";
  for (const auto& old : core::list_dir(dir))
    if (old.rfind("events.out.tfevents.", 0) == 0 && old.size() > suffix.size() &&
        old.compare(old.size() - suffix.size(), suffix.size(), suffix) == 0)
      std::remove((dir + "/" + old).c_str());
  auto w = std::make_unique<EventWriter>(dir);
  w->text("config", "```\n" + config_yaml + "\n```", 0);
  std::ifstream in(metrics_path);
  for (std::string line; std::getline(in, line);) w->metrics_line(line);
  return w;
}

}  // namespace gspo::io
