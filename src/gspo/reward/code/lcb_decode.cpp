#include "gspo/reward/code/lcb_decode.h"

#include <zlib.h>

#include <cstdint>
#include <cstdio>

#include "gspo/core/error.h"

namespace gspo::reward {

std::string base64_decode(const std::string& text, const std::string& where) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0, pad = 0;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    const int v = value(c);
    if (v < 0 || pad > 0) throw DataError(where + ": not base64 (unexpected character '" + std::string(1, c) + "')");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  if (pad > 2 || bits >= 6) throw DataError(where + ": not base64 (bad length or padding)");
  return out;
}

std::string zlib_inflate(const std::string& data, const std::string& where) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) throw DataError(where + ": zlib could not start");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // input ended before the stream did
  }
  const std::string msg = z.msg ? z.msg : "";
  inflateEnd(&z);
  if (rc != Z_STREAM_END)
    throw DataError(where + ": not a complete zlib stream" + (msg.empty() ? std::string() : " (" + msg + ")"));
  return out;
}

namespace {
uint64_t little_endian(const std::string& d, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(d[at + i]);
  return v;
}
}  // namespace

std::string unpickle_string(const std::string& d, const std::string& where) {
  auto refuse = [&](const std::string& why) {
    return DataError(where + ": the private tests are not a pickled string (" + why +
                     "); gspo reads only pickles of one str (LiveCodeBench's format)");
  };
  size_t i = 0;
  auto need = [&](size_t n) {
    if (i + n > d.size()) throw refuse("truncated at byte " + std::to_string(i));
  };
  std::string value;
  bool have = false;
  while (true) {
    need(1);
    const unsigned char op = static_cast<unsigned char>(d[i++]);
    if (op == 0x80) {  // PROTO n
      need(1);
      ++i;
    } else if (op == 0x95) {  // FRAME 8-byte length
      need(8);
      i += 8;
    } else if (op == 0x8c || op == 'X' || op == 0x8d) {  // SHORT_BINUNICODE, BINUNICODE, BINUNICODE8
      if (have) throw refuse("more than one value");
      const int width = op == 0x8c ? 1 : op == 'X' ? 4 : 8;
      need(width);
      const uint64_t n = little_endian(d, i, width);
      i += width;
      if (n > d.size() - i) throw refuse("a string longer than the data");
      value = d.substr(i, n);
      i += n;
      have = true;
    } else if (op == 0x94) {  // MEMOIZE
    } else if (op == 'q') {   // BINPUT 1-byte index
      need(1);
      ++i;
    } else if (op == 'r') {   // LONG_BINPUT 4-byte index
      need(4);
      i += 4;
    } else if (op == '.') {   // STOP
      if (!have) throw refuse("no string before STOP");
      return value;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", op);
      throw refuse(std::string("opcode ") + hex + " at byte " + std::to_string(i - 1));
    }
  }
}

std::string decode_private_tests(const std::string& field, const std::string& where) {
  const size_t first = field.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "[]";
  if (field[first] == '[' || field[first] == '{') return field;
  const std::string ctx = where + ": private_test_cases";
  return unpickle_string(zlib_inflate(base64_decode(field, ctx), ctx), ctx);
}

}  // namespace gspo::reward
