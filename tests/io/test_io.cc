// Tests for src/io: every reader against hand-built files (all .npy versions, byte orders,
// memory orders and dtypes), the atomic writers, and every kind of bad input the readers refuse.
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/dataset.hpp"

namespace flashkm::io {
namespace {

// A fresh directory per test, removed afterwards.
class IoTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = testing::TempDir() + "flashkm_io_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  std::string write(const std::string& name, const std::string& bytes) const {
    std::string p = path(name);
    std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    return p;
  }

  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string dir_;
};

// Reading the umask means setting it; fine in a single-threaded test.
mode_t umask_value() {
  const mode_t m = umask(0);
  umask(m);
  return m;
}

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs fn, which must throw E whose message contains every one of `needles`.
template <class E>
void expect_error(const std::function<void()>& fn, std::initializer_list<std::string> needles) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected one mentioning " << *needles.begin();
  } catch (const E& e) {
    std::string msg = e.what();
    for (const auto& n : needles) {
      EXPECT_NE(msg.find(n), std::string::npos) << "message: " << msg << "\nmissing: " << n;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// A .npy file written by hand: preamble of the given version, the dict padded to 64 bytes.
std::string npy_bytes(int version, const std::string& dict, const std::string& data) {
  std::string header = dict;
  const std::size_t preamble = version == 1 ? 10 : 12;
  header.append((64 - (preamble + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += char(version);
  out += char(0);
  const auto len = static_cast<std::uint32_t>(header.size());
  for (std::size_t i = 0; i < (version == 1 ? 2u : 4u); ++i) out += char((len >> (8 * i)) & 0xff);
  return out + header + data;
}

template <class U>
void put(std::string* out, U bits, bool big_endian) {
  for (std::size_t i = 0; i < sizeof(U); ++i) {
    const std::size_t shift = 8 * (big_endian ? sizeof(U) - 1 - i : i);
    *out += char((bits >> shift) & 0xff);
  }
}

// binary16 by the textbook formula, independent of the reader's bit manipulation.
double half_reference(std::uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  if (exp == 31) return mant == 0 ? sign * INFINITY : NAN;
  return sign * std::ldexp(1024 + mant, exp - 25);
}

// n random elements of dtype encoded in the given byte order, and their exact values.
struct Elements {
  std::vector<std::string> encoded;  // one string per element
  std::vector<double> values;
};

Elements random_elements(DType dtype, bool big_endian, std::size_t n, std::mt19937_64& rng) {
  Elements e;
  std::uniform_real_distribution<double> uni(-100.0, 100.0);
  for (std::size_t i = 0; i < n; ++i) {
    std::string b;
    switch (dtype) {
      case DType::kF16: {
        // Any finite half, subnormals included: sign, exponent 0..30, any mantissa.
        auto h = static_cast<std::uint16_t>(((rng() & 1) << 15) | ((rng() % 31) << 10) |
                                            (rng() & 0x3ff));
        put(&b, h, big_endian);
        e.values.push_back(half_reference(h));
        break;
      }
      case DType::kF32: {
        auto f = static_cast<float>(uni(rng));
        put(&b, std::bit_cast<std::uint32_t>(f), big_endian);
        e.values.push_back(f);
        break;
      }
      case DType::kF64: {
        double d = uni(rng);
        put(&b, std::bit_cast<std::uint64_t>(d), big_endian);
        e.values.push_back(d);
        break;
      }
      case DType::kU8: {
        auto u = static_cast<std::uint8_t>(rng());
        b += char(u);
        e.values.push_back(u);
        break;
      }
    }
    e.encoded.push_back(b);
  }
  return e;
}

// Reads [r0, r1) as float and as double and compares with expected (row-major) exactly: every
// conversion is a single correctly rounded step (or exact), the same one the test does.
void expect_rows(const Dataset& ds, const std::vector<double>& expected, std::size_t r0,
                 std::size_t r1) {
  const std::size_t c = ds.cols();
  std::vector<float> f((r1 - r0) * c, -1.0f);
  std::vector<double> d((r1 - r0) * c, -1.0);
  ds.read_rows(r0, r1, f.data());
  ds.read_rows(r0, r1, d.data());
  for (std::size_t i = 0; i < (r1 - r0) * c; ++i) {
    const double want = expected[r0 * c + i];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(d[i]) && std::isnan(f[i]));
      continue;
    }
    ASSERT_EQ(d[i], want) << "rows [" << r0 << ", " << r1 << ") element " << i;
    ASSERT_EQ(f[i], static_cast<float>(want)) << "rows [" << r0 << ", " << r1 << ") element " << i;
  }
}

// Whole range, first row, last row, and random sub-ranges.
void expect_all_ranges(const Dataset& ds, const std::vector<double>& expected,
                       std::mt19937_64& rng) {
  const std::size_t n = ds.rows();
  expect_rows(ds, expected, 0, n);
  expect_rows(ds, expected, 0, 1);
  expect_rows(ds, expected, n - 1, n);
  for (int k = 0; k < 6; ++k) {
    std::size_t a = rng() % n, b = rng() % n;
    if (a > b) std::swap(a, b);
    expect_rows(ds, expected, a, b + 1);
  }
}

const char* kind_code(DType t) {
  switch (t) {
    case DType::kF16: return "f2";
    case DType::kF32: return "f4";
    case DType::kF64: return "f8";
    case DType::kU8: return "u1";
  }
  return "";
}

// Builds an (rows x cols) .npy with the given layout and returns its expected row-major values.
std::vector<double> make_npy(std::string* bytes, int version, DType dtype, char order,
                             bool fortran, std::size_t rows, std::size_t cols,
                             std::mt19937_64& rng) {
  const bool big = order == '>';
  Elements e = random_elements(dtype, big, rows * cols, rng);
  std::string data;
  for (std::size_t k = 0; k < rows * cols; ++k) {
    // Element k in storage order is (i, j) = C: (k / cols, k % cols), F: (k % rows, k / rows).
    const std::size_t i = fortran ? k % rows : k / cols, j = fortran ? k / rows : k % cols;
    data += e.encoded[i * cols + j];
  }
  const std::string dict = std::string("{'descr': '") + order + kind_code(dtype) +
                           "', 'fortran_order': " + (fortran ? "True" : "False") +
                           ", 'shape': (" + std::to_string(rows) + ", " + std::to_string(cols) +
                           "), }";
  *bytes = npy_bytes(version, dict, data);
  return e.values;
}

TEST_F(IoTest, NpyEveryVersionDtypeByteOrderAndMemoryOrder) {
  std::mt19937_64 rng(20240601);
  for (int version : {1, 2, 3}) {
    for (DType dtype : {DType::kF16, DType::kF32, DType::kF64}) {
      for (char order : {'<', '>'}) {
        for (bool fortran : {false, true}) {
          for (auto [rows, cols] : {std::pair<std::size_t, std::size_t>{37, 5}, {1, 7}, {9, 1}}) {
            SCOPED_TRACE(testing::Message() << "v" << version << " " << dtype_name(dtype) << " "
                                            << order << (fortran ? " F" : " C") << " " << rows
                                            << "x" << cols);
            std::string bytes;
            auto expected = make_npy(&bytes, version, dtype, order, fortran, rows, cols, rng);
            const std::string p = write("a.npy", bytes);
            const DatasetInfo info = probe(p);
            EXPECT_EQ(info.format, Format::kNpy);
            EXPECT_EQ(info.npy_version, version);
            EXPECT_EQ(info.dtype, dtype);
            EXPECT_EQ(info.big_endian, order == '>');
            EXPECT_EQ(info.fortran_order, fortran);
            EXPECT_EQ(info.rows, rows);
            EXPECT_EQ(info.cols, cols);
            EXPECT_EQ(info.data_offset % 64, 0u);
            Dataset ds(p);
            expect_all_ranges(ds, expected, rng);
          }
        }
      }
    }
  }
}

TEST_F(IoTest, NpyNativeAndNotApplicableByteOrderAndUint8) {
  std::mt19937_64 rng(7);
  for (char order : {'=', '|'}) {
    std::string bytes;
    auto expected = make_npy(&bytes, 1, DType::kF32, order, false, 11, 3, rng);
    Dataset ds(write("n.npy", bytes));
    EXPECT_FALSE(ds.info().big_endian);
    expect_all_ranges(ds, expected, rng);
  }
  std::string bytes;
  auto expected = make_npy(&bytes, 1, DType::kU8, '|', true, 13, 4, rng);
  Dataset ds(write("u.npy", bytes));
  EXPECT_EQ(ds.info().dtype, DType::kU8);
  expect_all_ranges(ds, expected, rng);
}

TEST_F(IoTest, HalfConversionSpecialValues) {
  const std::vector<std::uint16_t> bits = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400,
                                           0x3c00, 0xc000, 0x3555, 0x7bff, 0xfbff, 0x7c00,
                                           0xfc00, 0x7e00, 0x7c01, 0xfe00};
  for (bool big : {false, true}) {
    std::string data;
    std::vector<double> expected;
    for (auto h : bits) {
      put(&data, h, big);
      expected.push_back(half_reference(h));
    }
    const std::string dict = std::string("{'descr': '") + (big ? '>' : '<') +
                             "f2', 'fortran_order': False, 'shape': (" +
                             std::to_string(bits.size()) + ", 1), }";
    Dataset ds(write("h.npy", npy_bytes(1, dict, data)));
    std::vector<float> f(bits.size());
    ds.read_rows(0, bits.size(), f.data());
    for (std::size_t i = 0; i < bits.size(); ++i) {
      if (std::isnan(expected[i])) {
        EXPECT_TRUE(std::isnan(f[i])) << std::hex << bits[i];
      } else {
        EXPECT_EQ(f[i], static_cast<float>(expected[i])) << std::hex << bits[i];
        EXPECT_EQ(std::signbit(f[i]), (bits[i] & 0x8000) != 0) << std::hex << bits[i];
      }
    }
    EXPECT_EQ(f[2], 0x1p-24f);      // smallest subnormal
    EXPECT_EQ(f[9], 65504.0f);      // largest finite half
    EXPECT_TRUE(std::isinf(f[11]) && f[11] > 0);
  }
}

// Ranges larger than the 4 MiB staging buffer, in both the staged paths (byte swap, Fortran).
TEST_F(IoTest, NpyReadsLargerThanTheStagingBuffer) {
  std::mt19937_64 rng(99);
  for (bool fortran : {false, true}) {
    std::string bytes;
    auto expected = make_npy(&bytes, 2, DType::kF64, '>', fortran, 230001, 3, rng);
    Dataset ds(write("big.npy", bytes));
    expect_rows(ds, expected, 0, ds.rows());
    expect_rows(ds, expected, 12345, 200001);
  }
}

TEST_F(IoTest, NpyHeaderDictIsParsedRobustly) {
  const std::string data(2 * 3 * 4, '\x01');
  for (std::string dict : {
           "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
           "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
           "{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(2,3)}",
           "  {  'fortran_order'  :  False ,\t'shape' : ( 2 , 3 , ) , 'descr' : '<f4' , }  ",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }",
       }) {
    SCOPED_TRACE(dict);
    const std::string b = npy_bytes(1, dict, data);
    const auto* u = reinterpret_cast<const unsigned char*>(b.data());
    DatasetInfo info = parse_npy_header("x.npy", u, b.size(), b.size());
    EXPECT_EQ(info.rows, 2u);
    EXPECT_EQ(info.cols, 3u);
    EXPECT_EQ(info.dtype, DType::kF32);
    EXPECT_FALSE(info.fortran_order);
  }
}

TEST_F(IoTest, NpyBadHeadersNameTheFileAndThePosition) {
  const std::string data(24, '\x01');
  auto header_error = [&](const std::string& bytes, std::initializer_list<std::string> needles) {
    const std::string p = write("bad.npy", bytes);
    expect_error<FormatError>([&] { probe(p); }, needles);
    expect_error<FormatError>([&] { Dataset ds(p); }, needles);
  };
  auto dict_error = [&](const std::string& dict, std::initializer_list<std::string> needles) {
    SCOPED_TRACE(dict);
    header_error(npy_bytes(1, dict, data), needles);
  };
  const std::string p = path("bad.npy");
  header_error("PK\x03\x04 not numpy at all", {p, "bad magic", "byte offset 0"});
  header_error(std::string("\x93NUMPY\x04\x00\x10\x00", 10) + std::string(16, ' '),
               {p, "version 4.0", "byte offset 6"});
  header_error(std::string("\x93NUMPY\x01\x00\xff\x7f{}", 12),
               {p, "header length 32767", "byte offset 8", "runs past the end"});
  header_error(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12) + "{}",
               {p, "implausible", "4294967295"});
  header_error(std::string("\x93NUMPY\x01", 7), {p, "too short"});
  {
    std::string b = npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                              data);
    b[30] = char(0xe9);
    header_error(b, {p, "0xe9", "byte offset 30", "ASCII"});
  }
  dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ",
             {p, "unterminated header"});
  dict_error("{'descr': '<f4' 'fortran_order': False}",
             {p, "expected ',' or '}'", "byte offset 26"});
  dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'descr",
             {p, "unterminated string"});
  dict_error("garbage", {p, "expected '{'", "byte offset 10"});
  dict_error("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3)}",
             {p, "True or False", "byte offset 44"});
  dict_error("{'descr': '<f4', 'fortran_order': False}", {p, "no 'shape'"});
  dict_error("{'descr': '<f4', 'shape': (2, 3), 'fortran_order': False, 'x': 1}",
             {p, "unexpected key 'x'"});
  dict_error("{'descr': '<f4', 'descr': '<f4', 'shape': (2, 3), 'fortran_order': False}",
             {p, "duplicate key 'descr'"});
  dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3)}", {p, "negative"});
  dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 1, 1)}",
             {p, "more than 3 dimensions"});
  dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 3)}",
             {p, "64 bits"});
  dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}",
             {p, "2^64"});
  for (std::string dtype : {"<U10", "|S5", "<c8", "|O", "<i4", "<i8", "|b1", ">M8[ns]", "<f16"}) {
    dict_error("{'descr': '" + dtype + "', 'fortran_order': False, 'shape': (2, 3)}",
               {p, "unsupported dtype '" + dtype + "'", "supported: float16, float32, float64"});
  }
  dict_error("{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': False, 'shape': (3, 2)}",
             {p, "structured dtypes", "supported: float16"});
  dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (6,)}",
             {p, "1-D array of 6 values; expected a 2-D array (rows, features)"});
  header_error(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': ()}", "abcd"),
               {p, "0-D array"});
  header_error(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3)}", ""),
               {p, "zero rows"});
  header_error(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 0)}", ""),
               {p, "zero columns"});
  // A 128-byte preamble and header promising 24 bytes of data.
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}";
  header_error(npy_bytes(1, dict, data.substr(0, 20)),
               {p, "promises 24 bytes", "after byte offset 128", "has 20", "too short"});
  header_error(npy_bytes(1, dict, data + "x"), {p, "promises 24 bytes", "has 25", "too long"});
}

TEST_F(IoTest, ReadNpyVector) {
  std::mt19937_64 rng(5);
  std::string bytes;
  auto e = random_elements(DType::kF32, false, 9, rng);
  std::string data;
  for (auto& s : e.encoded) data += s;
  const std::string p1 =
      write("w.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (9,)}", data));
  EXPECT_EQ(read_npy_vector(p1, 9), e.values);
  expect_error<FormatError>([&] { read_npy_vector(p1, 10); }, {p1, "9 values", "expected 10"});

  auto e2 = random_elements(DType::kF64, true, 6, rng);
  data.clear();
  for (auto& s : e2.encoded) data += s;
  const std::string p2 = write(
      "w2.npy", npy_bytes(3, "{'descr': '>f8', 'fortran_order': True, 'shape': (6, 1)}", data));
  EXPECT_EQ(read_npy_vector(p2, 6), e2.values);
  const std::string p3 = write(
      "w3.npy", npy_bytes(1, "{'descr': '>f8', 'fortran_order': False, 'shape': (3, 2)}", data));
  expect_error<FormatError>([&] { read_npy_vector(p3, 6); }, {p3, "(3, 2)", "1-D"});
}

std::string vecs_record(std::int32_t d, const std::string& payload) {
  std::string r;
  put(&r, static_cast<std::uint32_t>(d), false);
  return r + payload;
}

TEST_F(IoTest, FvecsAndBvecsRoundTrip) {
  std::mt19937_64 rng(11);
  for (Format format : {Format::kFvecs, Format::kBvecs}) {
    for (std::size_t d : {1, 3, 17}) {
      const DType dtype = format == Format::kFvecs ? DType::kF32 : DType::kU8;
      const std::size_t rows = 23;
      Elements e = random_elements(dtype, false, rows * d, rng);
      std::string file;
      for (std::size_t i = 0; i < rows; ++i) {
        std::string payload;
        for (std::size_t j = 0; j < d; ++j) payload += e.encoded[i * d + j];
        file += vecs_record(std::int32_t(d), payload);
      }
      const std::string p = write(format == Format::kFvecs ? "a.fvecs" : "a.BVECS", file);
      Dataset ds(p);
      EXPECT_EQ(ds.info().format, format);
      EXPECT_EQ(ds.rows(), rows);
      EXPECT_EQ(ds.cols(), d);
      expect_all_ranges(ds, e.values, rng);
    }
  }
}

// Records larger than the staging buffer take the per-record path.
TEST_F(IoTest, FvecsRecordsLargerThanTheStagingBuffer) {
  std::mt19937_64 rng(12);
  const std::size_t d = (std::size_t{5} << 20) / 4;
  Elements e = random_elements(DType::kF32, false, 2 * d, rng);
  std::string file;
  for (int i = 0; i < 2; ++i) {
    std::string payload;
    for (std::size_t j = 0; j < d; ++j) payload += e.encoded[i * d + j];
    file += vecs_record(std::int32_t(d), payload);
  }
  const std::string p = write("big.fvecs", file);
  Dataset ds(p);
  expect_rows(ds, e.values, 0, 2);
  expect_rows(ds, e.values, 1, 2);
}

TEST_F(IoTest, VecsBadInputs) {
  const std::string four_floats(16, '\x01');
  std::string p = write("z.fvecs", vecs_record(0, ""));
  expect_error<FormatError>([&] { probe(p); }, {p, "record 0", "byte offset 0", "dimension 0"});
  p = write("n.fvecs", vecs_record(-4, four_floats));
  expect_error<FormatError>([&] { probe(p); }, {p, "dimension -4"});
  p = write("h.fvecs", vecs_record(1000000000, four_floats));
  expect_error<FormatError>([&] { probe(p); }, {p, "dimension 1000000000", "byte offset 0"});
  p = write("s.bvecs", "ab");
  expect_error<FormatError>([&] { probe(p); }, {p, "truncated record at byte offset 0"});
  p = write("t.fvecs", vecs_record(4, four_floats) + vecs_record(4, four_floats) +
                           vecs_record(4, four_floats.substr(0, 7)));
  expect_error<FormatError>([&] { probe(p); }, {p, "truncated record at byte offset 40"});
  // Dimension changes in the middle: probe cannot see it (sizes agree), read_rows names it.
  std::string file;
  for (int i = 0; i < 6; ++i) file += vecs_record(i == 3 ? 5 : 4, four_floats);
  p = write("m.fvecs", file);
  Dataset ds(p);
  std::vector<float> out(6 * 4);
  ds.read_rows(0, 3, out.data());
  expect_error<FormatError>([&] { ds.read_rows(2, 6, out.data()); },
                            {p, "record 3", "byte offset 60", "dimension 5"});
  // ... but a different last record is caught by probe.
  file.clear();
  for (int i = 0; i < 6; ++i) file += vecs_record(i == 5 ? 3 : 4, four_floats);
  p = write("l.fvecs", file);
  expect_error<FormatError>([&] { probe(p); }, {p, "record 5", "byte offset 100", "dimension 3"});
}

TEST_F(IoTest, RawFloat32) {
  std::mt19937_64 rng(13);
  Elements e = random_elements(DType::kF32, false, 21 * 6, rng);
  std::string file;
  for (auto& s : e.encoded) file += s;
  for (const char* name : {"a.raw", "a.bin", "a.f32"}) {
    const std::string p = write(name, file);
    Dataset ds(p, 6);
    EXPECT_EQ(ds.info().format, Format::kRaw);
    EXPECT_EQ(ds.rows(), 21u);
    expect_all_ranges(ds, e.values, rng);
  }
  const std::string p = path("a.raw");
  expect_error<InvalidArgument>([&] { probe(p); }, {p, "dimension", "--dim"});
  expect_error<FormatError>([&] { probe(p, 5); },
                            {p, "not a multiple of the row size 20", "byte offset 500"});
  expect_error<FormatError>([&] { probe(p, 1000); }, {p, "4000 bytes"});
}

TEST_F(IoTest, CsvVariants) {
  struct Case {
    const char* text;
    std::size_t rows, cols;
    std::vector<double> values;
  };
  const std::vector<Case> cases = {
      {"1,2.5,-3\n4,5e3,6\n", 2, 3, {1, 2.5, -3, 4, 5e3, 6}},
      {"x,y\n1,2\n3,4", 2, 2, {1, 2, 3, 4}},
      {"\xEF\xBB\xBF\"a\", b \r\n 0.25 ,\t+7\r\n-1e-3,  8 \r\n\r\n  \n\n", 2, 2,
       {0.25, 7, -1e-3, 8}},
      {"42\n", 1, 1, {42}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    const std::string p = write("c.csv", c.text);
    Dataset ds(p);
    EXPECT_EQ(ds.info().format, Format::kCsv);
    ASSERT_EQ(ds.rows(), c.rows);
    ASSERT_EQ(ds.cols(), c.cols);
    std::vector<double> all(c.rows * c.cols);
    ds.read_rows(0, c.rows, all.data());
    EXPECT_EQ(all, c.values);
    std::vector<float> last(c.cols);
    ds.read_rows(c.rows - 1, c.rows, last.data());
    for (std::size_t j = 0; j < c.cols; ++j) {
      EXPECT_EQ(last[j], static_cast<float>(c.values[(c.rows - 1) * c.cols + j]));
    }
  }
  // NaN and infinity parse; the engine reports them with their row and column later.
  std::size_t rows = 0, cols = 0;
  auto v = parse_csv("n.txt", "nan,inf\n-inf,1\n", 15, &rows, &cols);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_TRUE(std::isinf(v[1]) && std::isinf(v[2]));

  // Random values survive printing with full precision and parsing back.
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> uni(-1e6, 1e6);
  std::ostringstream text;
  text.precision(17);
  std::vector<double> expected;
  for (int i = 0; i < 50; ++i) {
    for (int j = 0; j < 4; ++j) {
      expected.push_back(uni(rng));
      text << (j ? "," : "") << expected.back();
    }
    text << "\n";
  }
  Dataset ds(write("r.txt", text.str()));
  expect_all_ranges(ds, expected, rng);
}

TEST_F(IoTest, CsvBadInputsNameLineAndColumn) {
  auto csv_error = [&](const std::string& text, std::initializer_list<std::string> needles) {
    SCOPED_TRACE(text);
    const std::string p = write("bad.csv", text);
    expect_error<FormatError>([&] { probe(p); }, needles);
  };
  const std::string p = path("bad.csv");
  csv_error("1,2\n3,x4\n", {p, "line 2, column 2: 'x4' is not a number"});
  csv_error("a,b\n1,2\n3,4,5\n", {p, "line 3", "expected 2", "line 1"});
  csv_error("1,2\n3\n", {p, "line 2", "1 fields; expected 2"});
  csv_error("1,2,\n", {p, "line 1", "column 3", "'' is not a number"});
  csv_error("1,abc\n", {p, "line 1", "column 2", "'abc'"});
  csv_error("1,2\n\n3,4\n", {p, "line 2", "blank line"});
  csv_error("1,1e999\n", {p, "line 1", "column 2", "out of the float64 range"});
  csv_error("1,0x10\n", {p, "column 2", "'0x10'"});
  csv_error("1," + std::string(100, 'z') + "\n", {p, "'zzzzzzzzzz", "...'"});
  csv_error("a,b\n", {p, "no data rows"});
  csv_error("\n \n", {p, "no data"});
}

TEST_F(IoTest, FileErrorsNameTheFile) {
  const std::string missing = path("missing.npy");
  expect_error<FileError>([&] { probe(missing); }, {missing, "No such file"});
  const std::string dirpath = path("dir.npy");
  ASSERT_EQ(mkdir(dirpath.c_str(), 0755), 0);
  expect_error<FileError>([&] { Dataset ds(dirpath); }, {dirpath, "directory"});
  const std::string empty = write("empty.fvecs", "");
  expect_error<FormatError>([&] { probe(empty); }, {empty, "empty"});
  const std::string unknown = write("data.parquet", "x");
  expect_error<FormatError>([&] { probe(unknown); },
                            {unknown, "'.parquet'", ".npy", ".fvecs", ".bvecs", ".csv", "--dim"});
  expect_error<FormatError>([&] { format_from_path("noext"); }, {"noext", "no file extension"});
  EXPECT_EQ(format_from_path("/a.b/c.NPY"), Format::kNpy);
  // A path nobody can open for reading, root included (tests run as root, which ignores
  // permission bits): a Unix socket.
  const std::string sock = path("sock.npy");
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  expect_error<FileError>([&] { probe(sock); }, {sock});
  close(fd);
}

TEST_F(IoTest, FileShrinkingAfterProbeIsAFileError) {
  std::mt19937_64 rng(3);
  std::string bytes;
  make_npy(&bytes, 1, DType::kF32, '<', false, 50, 4, rng);
  const std::string p = write("s.npy", bytes);
  Dataset ds(p);
  ASSERT_EQ(truncate(p.c_str(), 128 + 10 * 16), 0);
  std::vector<float> out(50 * 4);
  ds.read_rows(0, 10, out.data());
  expect_error<FileError>([&] { ds.read_rows(5, 50, out.data()); },
                          {p, "shorter", "ends at byte offset 288", "from byte offset 208"});
  expect_error<InvalidArgument>([&] { ds.read_rows(3, 51, out.data()); }, {p, "out of range"});
}

TEST_F(IoTest, WriteNpyRoundTripsAndLeavesNoTemporaryFile) {
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<double> uni(-50.0, 50.0);
  const std::size_t rows = 17, cols = 6;
  std::vector<float> f(rows * cols);
  std::vector<double> d(rows * cols);
  std::vector<std::uint16_t> h(rows * cols);
  std::vector<double> f_exp, d_exp, h_exp;
  for (std::size_t i = 0; i < rows * cols; ++i) {
    f[i] = static_cast<float>(uni(rng));
    d[i] = uni(rng);
    h[i] = static_cast<std::uint16_t>(((rng() & 1) << 15) | ((rng() % 31) << 10) | (rng() & 0x3ff));
    f_exp.push_back(f[i]);
    d_exp.push_back(d[i]);
    h_exp.push_back(half_reference(h[i]));
  }
  const std::string p = path("out.npy");
  write_npy(p, DType::kF32, {rows, cols}, f.data());
  EXPECT_EQ(entries(), std::vector<std::string>{"out.npy"});
  EXPECT_EQ(slurp(p).substr(0, 70),
            std::string("\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (17, 6), }", 70));
  {
    Dataset ds(p);
    EXPECT_EQ(ds.info().data_offset, 128u);
    expect_all_ranges(ds, f_exp, rng);
  }
  struct stat st {};
  ASSERT_EQ(stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u & ~umask_value());
  write_npy(p, DType::kF64, {rows, cols}, d.data());
  expect_all_ranges(Dataset(p), d_exp, rng);
  write_npy(p, DType::kF16, {rows, cols}, h.data());
  expect_all_ranges(Dataset(p), h_exp, rng);
  write_npy(p, DType::kF64, {rows * cols}, d.data());
  EXPECT_EQ(read_npy_vector(p, rows * cols), d_exp);
  EXPECT_EQ(entries(), std::vector<std::string>{"out.npy"});

  // int32 labels: refused as data, but the header and bytes are what numpy expects.
  std::vector<std::int32_t> labels = {3, -1, 70000, 0, 2};
  const std::string lp = path("labels.npy");
  write_npy_int32(lp, {labels.size()}, labels.data());
  const std::string b = slurp(lp);
  ASSERT_EQ(b.size(), 128 + labels.size() * 4);
  EXPECT_NE(b.find("{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }"), std::string::npos);
  EXPECT_EQ(b[127], '\n');
  EXPECT_EQ(std::memcmp(b.data() + 128, labels.data(), labels.size() * 4), 0);
  expect_error<FormatError>([&] { probe(lp); }, {lp, "'<i4'", "signed integer"});

  write_text_atomic(path("r.html"), "<p>report</p>\n");
  EXPECT_EQ(slurp(path("r.html")), "<p>report</p>\n");
  EXPECT_EQ(entries(), (std::vector<std::string>{"labels.npy", "out.npy", "r.html"}));
}

TEST_F(IoTest, ThreeDimensionalNpyIsABatchOfProblems) {
  // (B, N, D) in C order: B * N rows of D, batch = B; written back by write_npy.
  std::vector<float> v(2 * 3 * 4);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * static_cast<float>(i) - 3.0f;
  const std::string p = path("b.npy");
  write_npy(p, DType::kF32, {2, 3, 4}, v.data());
  const DatasetInfo info = probe(p);
  EXPECT_EQ(info.batch, 2u);
  EXPECT_EQ(info.rows, 6u);
  EXPECT_EQ(info.cols, 4u);
  Dataset ds(p);
  std::vector<float> got(12);
  ds.read_rows<float>(3, 6, got.data());  // the second problem
  EXPECT_EQ(got, std::vector<float>(v.begin() + 12, v.end()));
  write_npy(path("two.npy"), DType::kF32, {6, 4}, v.data());
  EXPECT_EQ(probe(path("two.npy")).batch, 1u);
  expect_error<FormatError>([&] { read_npy_vector(p, 24); }, {p, "3-D"});
}

TEST_F(IoTest, OutputSetReplacesAllOrNothing) {
  const float c[4] = {1.5f, -2.0f, 3.25f, 4.0f};
  const std::int32_t l[3] = {0, 1, 1};
  const std::string centroids = write("c.npy", "old centroids");
  const std::string labels = write("l.npy", "old labels");
  {
    // The second output cannot be written: the first target keeps its old content.
    OutputSet set;
    set.add_npy(centroids, DType::kF32, {2, 2}, c);
    expect_error<FileError>([&] { set.add_npy_int32(path("no/dir/l.npy"), {3}, l); }, {"no/dir/l.npy"});
  }
  std::ifstream f(centroids, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(f), {}), "old centroids");
  EXPECT_EQ(entries(), (std::vector<std::string>{"c.npy", "l.npy"}));
  {
    OutputSet set;  // destroyed without commit: nothing changes
    set.add_npy(centroids, DType::kF32, {2, 2}, c);
    set.add_text(path("r.html"), "<html></html>");
  }
  EXPECT_EQ(entries(), (std::vector<std::string>{"c.npy", "l.npy"}));
  OutputSet set;
  set.add_npy(centroids, DType::kF32, {2, 2}, c);
  set.add_npy_int32(labels, {3}, l);
  set.add_text(path("r.html"), "<html></html>");
  set.commit();
  EXPECT_EQ(entries(), (std::vector<std::string>{"c.npy", "l.npy", "r.html"}));
  Dataset back(centroids);
  std::vector<float> got(4);
  back.read_rows<float>(0, 2, got.data());
  EXPECT_EQ(got, std::vector<float>(c, c + 4));
}

TEST_F(IoTest, FailedWritesThrowFileErrorAndKeepThePreviousFile) {
  const float one[2] = {1.0f, 2.0f};
  const std::string nodir = path("no/such/dir/out.npy");
  expect_error<FileError>([&] { write_npy(nodir, DType::kF32, {1, 2}, one); },
                          {nodir, "No such file or directory"});
  const std::string isdir = path("taken.npy");
  ASSERT_EQ(mkdir(isdir.c_str(), 0755), 0);
  expect_error<FileError>([&] { write_npy(isdir, DType::kF32, {1, 2}, one); },
                          {isdir, "rename", "Is a directory"});
  EXPECT_TRUE(std::filesystem::is_directory(isdir));
  EXPECT_EQ(entries(), std::vector<std::string>{"taken.npy"});

  // A write that fails half way (file size limit; works as root too) leaves the old file.
  const std::string p = path("keep.npy");
  write_text_atomic(p, "previous content");
  std::vector<float> big(1 << 16, 3.0f);
  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  expect_error<FileError>([&] { write_npy(p, DType::kF32, {big.size() / 4, 4}, big.data()); },
                          {p, "File too large"});
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);
  EXPECT_EQ(slurp(p), "previous content");
  EXPECT_EQ(entries(), (std::vector<std::string>{"keep.npy", "taken.npy"}));
}

}  // namespace
}  // namespace flashkm::io
