// safetensors files: round trips, hand-built and torch-written files, every corruption refused with a
// clear message, and atomic writes that never damage an existing file.
#include "serialize/safetensors.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <sys/stat.h>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autograd/autograd.h"
#include "tests/support/compare.h"
#include "tests/support/files.h"
#include "tests/support/fixtures.h"

using namespace normlab::autograd;
using normlab::Error;
using normlab::serialize::load_safetensors;
using normlab::serialize::NamedTensors;
using normlab::serialize::save_safetensors;
using normlab::test::check_tensor;
using normlab::test::Fixture;
using normlab::test::read_file;
using normlab::test::st_file;
using normlab::test::TempDir;
using normlab::test::write_file;
using json = nlohmann::json;

namespace {

// The raw bytes of values of type T.
template <typename T>
std::string raw(std::initializer_list<T> values) {
  std::string s;
  for (T v : values) s.append(reinterpret_cast<const char*>(&v), sizeof v);
  return s;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.numel() * dtype_size(a.dtype())) == 0;
}

const Tensor& find(const NamedTensors& ts, const std::string& name) {
  for (auto& [n, t] : ts)
    if (n == name) return t;
  BOOST_FAIL("no tensor named " << name);
  throw;
}

// Loading `bytes` fails with a normlab::Error whose message names the file and contains `what`.
void expect_refused(const TempDir& dir, const std::string& bytes, const std::string& what) {
  const std::string path = dir.file("corrupt.safetensors");
  write_file(path, bytes);
  try {
    load_safetensors(path);
    BOOST_ERROR("a corrupt file (expected: " << what << ") was accepted");
  } catch (const Error& e) {
    const std::string msg = e.what();
    BOOST_TEST_INFO("message: " << msg);
    BOOST_CHECK(msg.find(path) != std::string::npos);
    BOOST_CHECK_MESSAGE(msg.find(what) != std::string::npos, "expected '" << what << "' in: " << msg);
  }
}

// The header JSON of a file on disk.
json header_of(const std::string& path) {
  const std::string bytes = read_file(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return json::parse(bytes.substr(8, n));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(safetensors)

BOOST_AUTO_TEST_CASE(round_trip_keeps_every_bit_of_float32_and_float64_ranks_0_to_4) {
  TempDir dir;
  Generator gen(7);
  NamedTensors ts;
  const std::vector<Shape> shapes = {{}, {5}, {2, 3}, {2, 1, 4}, {2, 3, 1, 2}, {0}, {2, 0, 3}};
  for (DType dt : {DType::Float32, DType::Float64})
    for (size_t i = 0; i < shapes.size(); ++i)
      ts.emplace_back(dtype_name(dt) + ".r" + std::to_string(i), randn(shapes[i], gen, 0, 1, dt));
  // Values that must survive bit for bit: NaN, infinities, -0, a subnormal.
  Tensor special = tensor({0, 0, 0, 0, 0}, DType::Float64);
  double* s = special.data<double>();
  s[0] = std::numeric_limits<double>::quiet_NaN();
  s[1] = std::numeric_limits<double>::infinity();
  s[2] = -0.0;
  s[3] = std::numeric_limits<double>::denorm_min();
  s[4] = -std::numeric_limits<double>::max();
  ts.emplace_back("special", special);
  const std::map<std::string, std::string> meta = {
      {"format", "pt"}, {"empty", ""}, {"unicode", "\xce\xbb=0.1 \xe2\x9c\x93"}, {"quote\"d", "a\nb"}};
  const std::string path = dir.file("t.safetensors");
  save_safetensors(path, ts, meta);

  auto file = load_safetensors(path);
  BOOST_TEST(file.metadata == meta);
  BOOST_REQUIRE_EQUAL(file.tensors.size(), ts.size());
  for (auto& [name, t] : ts) {
    BOOST_TEST_CONTEXT("tensor " << name) {
      const Tensor& got = find(file.tensors, name);
      BOOST_TEST(got.shape() == t.shape());
      BOOST_TEST(dtype_name(got.dtype()) == dtype_name(t.dtype()));
      BOOST_TEST(same_bits(got, t));
    }
  }
  // The data follows the given order within a dtype (8-byte types first).
  std::vector<std::string> order;
  for (auto& [n, t] : file.tensors) order.push_back(n);
  BOOST_TEST(order.front() == "float64.r0");
  BOOST_TEST(order.back() == "float32.r6");
}

BOOST_AUTO_TEST_CASE(file_layout_follows_the_spec) {
  TempDir dir;
  const std::string path = dir.file("t.safetensors");
  // Names out of alphabetical order, mixed dtypes (a 4-byte tensor given first).
  save_safetensors(path, {{"z", tensor({1, 2, 3}, DType::Float32)}, {"a", tensor({4, 5}, DType::Float64)}},
                   {{"k", "v"}});
  const std::string bytes = read_file(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  BOOST_TEST(n % 8 == 0u);  // padded so the data starts 8-byte aligned
  BOOST_TEST(bytes[8] == '{');
  BOOST_TEST(bytes.size() == 8 + n + 3 * 4 + 2 * 8);
  const json h = json::parse(bytes.substr(8, n));
  BOOST_TEST(h["__metadata__"] == json({{"k", "v"}}));
  BOOST_TEST(h["a"]["dtype"] == "F64");
  BOOST_TEST(h["a"]["shape"] == json::array({2}));
  BOOST_TEST(h["a"]["data_offsets"] == json::array({0, 16}));  // the 8-byte type goes first
  BOOST_TEST(h["z"]["dtype"] == "F32");
  BOOST_TEST(h["z"]["data_offsets"] == json::array({16, 28}));
  double a1;
  float z2;
  std::memcpy(&a1, bytes.data() + 8 + n + 8, 8);
  std::memcpy(&z2, bytes.data() + 8 + n + 16 + 8, 4);
  BOOST_TEST(a1 == 5.0);
  BOOST_TEST(z2 == 3.0f);
  // Tensors are listed sorted by name in the header text, as the Python library's files are.
  const std::string text = bytes.substr(8, n);
  BOOST_TEST(text.find("\"a\"") < text.find("\"z\""));
}

BOOST_AUTO_TEST_CASE(reads_a_hand_built_file_with_every_supported_dtype) {
  TempDir dir;
  // Offsets in a different order than the header's, as other writers may produce.
  const std::string header =
      R"({"f32":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("i64":{"dtype":"I64","shape":[],"data_offsets":[8,16]},)"
      R"("i32":{"dtype":"I32","shape":[3],"data_offsets":[16,28]},)"
      R"("f64":{"dtype":"F64","shape":[1,1],"data_offsets":[28,36]},)"
      R"("none":{"dtype":"F32","shape":[0,4],"data_offsets":[36,36]},)"
      R"("__metadata__":{"format":"pt"}}    )";  // trailing padding is allowed
  const std::string data = raw<float>({1.5f, -2.25f}) + raw<int64_t>({-7}) + raw<int32_t>({1, 2, -3}) +
                           raw<double>({0.1});
  const std::string path = dir.file("hand.safetensors");
  write_file(path, st_file(header, data));
  auto f = load_safetensors(path);
  BOOST_TEST(f.metadata.at("format") == "pt");
  BOOST_REQUIRE_EQUAL(f.tensors.size(), 5u);
  // Returned in the order of the data.
  BOOST_TEST(f.tensors[0].first == "f32");
  BOOST_TEST(f.tensors[3].first == "f64");
  const Tensor& f32 = find(f.tensors, "f32");
  BOOST_TEST(dtype_name(f32.dtype()) == "float32");
  BOOST_TEST(f32.flat(0) == 1.5);
  BOOST_TEST(f32.flat(1) == -2.25);
  // Integers are read as float64 tensors holding the same values.
  const Tensor& i64 = find(f.tensors, "i64");
  BOOST_TEST(dtype_name(i64.dtype()) == "float64");
  BOOST_TEST(i64.dim() == 0);
  BOOST_TEST(i64.item() == -7.0);
  const Tensor& i32 = find(f.tensors, "i32");
  BOOST_TEST(dtype_name(i32.dtype()) == "float64");
  check_tensor(i32, {1, 2, -3}, 0, 0);
  const Tensor& f64 = find(f.tensors, "f64");
  BOOST_TEST(f64.shape() == Shape({1, 1}));
  BOOST_TEST(f64.flat(0) == 0.1);
  BOOST_TEST(find(f.tensors, "none").shape() == Shape({0, 4}));
}

BOOST_AUTO_TEST_CASE(num_batches_tracked_is_written_as_int64) {
  TempDir dir;
  const std::string path = dir.file("bn.safetensors");
  save_safetensors(path, {{"1.running_mean", tensor({0.5, -0.5})}, {"1.num_batches_tracked", scalar(7)}});
  const json h = header_of(path);
  BOOST_TEST(h["1.num_batches_tracked"]["dtype"] == "I64");
  BOOST_TEST(h["1.num_batches_tracked"]["shape"] == json::array());
  BOOST_TEST(h["1.running_mean"]["dtype"] == "F32");
  const std::string bytes = read_file(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  int64_t v = 0;
  std::memcpy(&v, bytes.data() + 8 + n + h["1.num_batches_tracked"]["data_offsets"][0].get<size_t>(), 8);
  BOOST_TEST(v == 7);
  auto f = load_safetensors(path);
  BOOST_TEST(find(f.tensors, "1.num_batches_tracked").item() == 7.0);

  // A counter that is not a whole number cannot be stored as I64: refused, nothing written.
  const std::string bad = dir.file("bad.safetensors");
  BOOST_CHECK_EXCEPTION(save_safetensors(bad, {{"num_batches_tracked", scalar(2.5)}}), Error,
                        [](const Error& e) { return std::string(e.what()).find("whole numbers") != std::string::npos; });
  BOOST_TEST(!std::filesystem::exists(bad));
}

BOOST_AUTO_TEST_CASE(reads_torch_written_fixtures_with_values_known_independently) {
  // BatchNorm1d after k training steps: num_batches_tracked (int64 in torch) is k, and the running
  // mean after the first step is 0.1 * the batch mean (it starts at 0), the running variance
  // 0.9 + 0.1 * the unbiased batch variance (it starts at 1).
  Fixture bn("batchnorm1d");
  BOOST_TEST(bn.get("f32.nc_momentum.step2.num_batches_tracked").item() == 3.0);
  BOOST_TEST(bn.get("f64.ncl_cumulative.step0.num_batches_tracked").item() == 1.0);
  for (const char* dt : {"f32", "f64"}) {
    const std::string p = std::string(dt) + ".nc_momentum.step0.";
    const Tensor x = bn.get(p + "input");  // (8, 3)
    std::vector<double> rm, rv;
    for (int64_t c = 0; c < 3; ++c) {
      double m = 0, ss = 0;
      for (int64_t i = 0; i < 8; ++i) m += x.at({i, c}) / 8;
      for (int64_t i = 0; i < 8; ++i) ss += (x.at({i, c}) - m) * (x.at({i, c}) - m);
      rm.push_back(0.1 * m);
      rv.push_back(0.9 + 0.1 * ss / 7);
    }
    check_tensor(bn.get(p + "running_mean"), rm, 1e-5, 1e-7);
    check_tensor(bn.get(p + "running_var"), rv, 1e-5, 1e-7);
  }
  // Seed 000's worked example: PyTorch's LayerNorm of [[0.2,0.1,0.3],[0.5,0.1,0.1]].
  Fixture ln("layernorm");
  check_tensor(ln.get("f32.seed000.input"), {0.2f, 0.1f, 0.3f, 0.5f, 0.1f, 0.1f}, 0, 0);
  check_tensor(ln.get("f32.seed000.output"), {0, -1.2238, 1.2238, 1.4140, -0.7070, -0.7070}, 0, 1e-4);
  BOOST_TEST(ln.meta("two_dims_affine.normalized_shape") == "[4, 5]");
  // Plain SGD's first step: param0 - lr * grad1.
  Fixture sgd("sgd");
  const Tensor p0 = sgd.get("f64.param0"), g1 = sgd.get("f64.grad1");
  std::vector<double> want;
  for (int64_t i = 0; i < p0.numel(); ++i) want.push_back(p0.flat(i) - 0.1 * g1.flat(i));
  check_tensor(sgd.get("f64.m0d0n0w0x0.step1"), want, 1e-15, 0);
  // Cross-entropy targets are int64 class indices in [0, 5).
  Fixture losses("losses");
  const Tensor target = losses.get("f32.cross_entropy.target");
  BOOST_TEST(target.numel() == 6);
  for (double v : target.to_vector()) BOOST_TEST((v >= 0 && v < 5 && v == std::floor(v)));
}

BOOST_AUTO_TEST_CASE(fixture_helper_names_a_missing_tensor) {
  Fixture sgd("sgd");
  BOOST_CHECK_EXCEPTION(sgd.get("f64.grad9"), Error, [](const Error& e) {
    const std::string m = e.what();
    return m.find("'sgd'") != std::string::npos && m.find("f64.grad9") != std::string::npos &&
           m.find("f64.grad1") != std::string::npos;
  });
  BOOST_CHECK_THROW(Fixture("no_such_fixture"), Error);
}

BOOST_AUTO_TEST_CASE(every_corruption_is_refused_with_a_clear_message) {
  TempDir dir;
  const std::string ok_entry = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string data8 = raw<float>({1, 2});
  auto one = [&](const std::string& entry, const std::string& data) {
    return st_file("{" + entry + "}", data);
  };
  // The file itself.
  try {
    load_safetensors(dir.file("missing.safetensors"));
    BOOST_ERROR("a missing file was accepted");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("missing.safetensors") != std::string::npos);
    BOOST_TEST(std::string(e.what()).find("cannot open") != std::string::npos);
  }
  BOOST_CHECK_EXCEPTION(load_safetensors(dir.path()), Error,
                        [](const Error& e) { return std::string(e.what()).find("not a regular file") != std::string::npos; });
  // A named pipe is refused at once (without O_NONBLOCK, open() would wait for a writer forever).
  const std::string fifo = dir.file("pipe.safetensors");
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  BOOST_CHECK_EXCEPTION(load_safetensors(fifo), Error,
                        [](const Error& e) { return std::string(e.what()).find("not a regular file") != std::string::npos; });
  expect_refused(dir, "", "shorter than the 8-byte header length");
  expect_refused(dir, std::string("\x05\0\0", 3), "shorter than the 8-byte header length");
  // The header length.
  expect_refused(dir, one(ok_entry, data8).substr(0, 30), "truncated");
  std::string huge = one(ok_entry, data8);
  huge[7] = '\x7f';
  expect_refused(dir, huge, "truncated");
  // The JSON.
  expect_refused(dir, st_file("{\"w\": {", data8), "not valid JSON");
  expect_refused(dir, st_file("", ""), "not valid JSON");
  expect_refused(dir, st_file("{\"\xff\xfe\":{}}", ""), "not valid JSON");  // not UTF-8
  expect_refused(dir, st_file("[1, 2]", ""), "must be a JSON object");
  expect_refused(dir, st_file("{" + ok_entry + "," + ok_entry + "}", data8), "'w' appears twice");
  expect_refused(dir, one(R"("w":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]})", data8),
                 "'dtype' appears twice");
  expect_refused(dir, one(R"("w":[1])", ""), "the entry must be an object");
  expect_refused(dir, one(R"("w":{"shape":[2],"data_offsets":[0,8]})", data8), "has no \"dtype\"");
  expect_refused(dir, one(R"("w":{"dtype":"F32","data_offsets":[0,8]})", data8), "has no \"shape\"");
  expect_refused(dir, one(R"("w":{"dtype":"F32","shape":[2]})", data8), "has no \"data_offsets\"");
  expect_refused(dir, st_file(R"({"__metadata__":{"a":1}})", ""), "__metadata__ value of 'a' must be a string");
  expect_refused(dir, st_file(R"({"__metadata__":[]})", ""), "__metadata__ must be an object");
  // dtypes.
  expect_refused(dir, one(R"("w":{"dtype":"Q8","shape":[2],"data_offsets":[0,8]})", data8), "unknown dtype 'Q8'");
  expect_refused(dir, one(R"("w":{"dtype":"F16","shape":[4],"data_offsets":[0,8]})", data8),
                 "dtype F16 is not supported");
  expect_refused(dir, one(R"("w":{"dtype":32,"shape":[2],"data_offsets":[0,8]})", data8), "dtype must be a string");
  // Shapes.
  for (const char* shape : {"[-2]", "[2.0]", "[\"2\"]", "2", "[true]", "{}", "[[2]]"})
    expect_refused(dir, one(std::string(R"("w":{"dtype":"F32","shape":)") + shape + R"(,"data_offsets":[0,8]})", data8),
                   "shape must be a list of non-negative integers");
  // Nested 300000 deep: refused without recursing (no stack overflow).
  const std::string deep = std::string(300000, '[') + std::string(300000, ']');
  expect_refused(dir, one(R"("w":{"dtype":"F32","shape":)" + deep + R"(,"data_offsets":[0,8]})", data8),
                 "shape must be a list of non-negative integers, got a JSON array of 1 nested values");
  expect_refused(dir, st_file(deep, ""), "must be a JSON object");
  expect_refused(dir, one(R"("w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]})", data8),
                 "too many elements");
  // Offsets.
  for (const char* off : {"[0]", "[0,8,16]", "[8,0]", "[-1,7]", "[0.0,8]", "\"0,8\"", "null"})
    expect_refused(dir, one(std::string(R"("w":{"dtype":"F32","shape":[2],"data_offsets":)") + off + "}", data8),
                   "data_offsets must be [begin, end]");
  expect_refused(dir, one(R"("w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]})", data8),
                 "span 8 bytes, but dtype F32 and shape [3] need 12");
  expect_refused(dir, one(R"("w":{"dtype":"F64","shape":[2],"data_offsets":[0,16]})", data8),
                 "reach past the end of the data area (8 bytes)");
  expect_refused(dir, one(ok_entry, data8.substr(0, 5)), "reach past the end");  // truncated data
  const std::string a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  expect_refused(dir, st_file("{" + a + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", data8 + data8),
                 "tensors 'a' and 'b' overlap");
  expect_refused(dir, st_file("{" + a + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
                              data8 + data8 + "1234"),
                 "bytes 8 to 12 of the data area belong to no tensor");
  expect_refused(dir, st_file(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data8),
                 "bytes 0 to 4 of the data area belong to no tensor");
  expect_refused(dir, one(ok_entry, data8 + "xx"), "the data area is 10 bytes but the tensors cover 8 bytes");
}

BOOST_AUTO_TEST_CASE(every_truncation_and_header_byte_flip_is_an_error_not_a_crash) {
  TempDir dir;
  const std::string path = dir.file("good.safetensors");
  save_safetensors(path, {{"w", tensor({1, 2, 3, 4}, {2, 2})}, {"b", tensor({5, 6}, DType::Float64)}},
                   {{"step", "3"}});
  const std::string good = read_file(path);
  uint64_t n = 0;
  std::memcpy(&n, good.data(), 8);
  const std::string cut_path = dir.file("cut.safetensors");
  for (size_t len = 0; len < good.size(); ++len) {
    write_file(cut_path, good.substr(0, len));
    BOOST_CHECK_THROW(load_safetensors(cut_path), Error);
  }
  // Changing any one byte of the length or the header either leaves a valid file (e.g. a digit of
  // the metadata value, a padding space) or is refused; it never crashes or reads out of bounds.
  int refused = 0;
  for (size_t i = 0; i < 8 + n; ++i)
    for (char c : {'0', '9', '"', '}', '\xff', ' ', '\0'}) {
      std::string bad = good;
      if (bad[i] == c) continue;
      bad[i] = c;
      write_file(cut_path, bad);
      try {
        load_safetensors(cut_path);
      } catch (const Error&) {
        ++refused;
      }
    }
  BOOST_TEST(refused > static_cast<int>(8 + n));
}

BOOST_AUTO_TEST_CASE(bad_tensors_are_refused_before_anything_is_written) {
  TempDir dir;
  const std::string path = dir.file("t.safetensors");
  save_safetensors(path, {{"x", tensor({1})}});
  const std::string before = read_file(path);
  auto refused = [&](const NamedTensors& ts, const std::string& what) {
    try {
      save_safetensors(path, ts);
      BOOST_ERROR("accepted: " << what);
    } catch (const Error& e) {
      BOOST_CHECK_MESSAGE(std::string(e.what()).find(what) != std::string::npos, e.what());
      BOOST_CHECK(std::string(e.what()).find(path) != std::string::npos);
    }
  };
  refused({{"a", tensor({1})}, {"a", tensor({2})}}, "'a' is given twice");
  refused({{"__metadata__", tensor({1})}}, "'__metadata__' is reserved");
  refused({{"", tensor({1})}}, "empty name");
  refused({{"u", Tensor()}}, "'u' is undefined");
  BOOST_TEST(read_file(path) == before);
  BOOST_TEST(dir.entries() == std::vector<std::string>{"t.safetensors"});
}

BOOST_AUTO_TEST_CASE(a_successful_save_replaces_the_file_and_leaves_no_temporary) {
  TempDir dir;
  const std::string path = dir.file("t.safetensors");
  save_safetensors(path, {{"x", tensor({1, 2})}});
  save_safetensors(path, {{"y", tensor({3, 4, 5}, DType::Float64)}});
  auto f = load_safetensors(path);
  BOOST_REQUIRE_EQUAL(f.tensors.size(), 1u);
  BOOST_TEST(f.tensors[0].first == "y");
  check_tensor(f.tensors[0].second, {3, 4, 5}, 0, 0);
  BOOST_TEST(dir.entries() == std::vector<std::string>{"t.safetensors"});
}

BOOST_AUTO_TEST_CASE(a_failed_save_leaves_the_existing_file_and_no_temporary) {
  TempDir dir;
  // Into a directory that does not exist: nothing can be created.
  BOOST_CHECK_EXCEPTION(save_safetensors(dir.file("no/such/dir/t.safetensors"), {{"x", tensor({1})}}), Error,
                        [](const Error& e) {
                          return std::string(e.what()).find("no/such/dir/t.safetensors") != std::string::npos &&
                                 std::string(e.what()).find("No such file or directory") != std::string::npos;
                        });
  BOOST_TEST(dir.entries().empty());
  // Onto a path that is a directory: the temporary file is written, the rename fails, the
  // temporary is removed and the directory is untouched.
  std::filesystem::create_directory(dir.file("taken"));
  write_file(dir.file("taken/inside"), "keep");
  BOOST_CHECK_EXCEPTION(save_safetensors(dir.file("taken"), {{"x", tensor({1})}}), Error,
                        [](const Error& e) { return std::string(e.what()).find("cannot rename") != std::string::npos; });
  BOOST_TEST(dir.entries() == std::vector<std::string>{"taken"});
  BOOST_TEST(read_file(dir.file("taken/inside")) == "keep");
  // In a read-only directory (meaningless for root, who may write anyway).
  if (::geteuid() != 0) {
    std::filesystem::create_directory(dir.file("ro"));
    write_file(dir.file("ro/t.safetensors"), "old");
    std::filesystem::permissions(dir.file("ro"), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    BOOST_CHECK_THROW(save_safetensors(dir.file("ro/t.safetensors"), {{"x", tensor({1})}}), Error);
    std::filesystem::permissions(dir.file("ro"), std::filesystem::perms::owner_all);
    BOOST_TEST(read_file(dir.file("ro/t.safetensors")) == "old");
  }
}

BOOST_AUTO_TEST_CASE(a_save_failing_mid_write_leaves_the_existing_file_and_no_temporary) {
  TempDir dir;
  const std::string path = dir.file("t.safetensors");
  save_safetensors(path, {{"old", tensor({1, 2, 3})}});
  const std::string before = read_file(path);
  // Cap the size of files this process may write (as a full disk would), so that the write of
  // the data fails after the header was written.
  rlimit saved;
  BOOST_REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);  // else the kernel kills us instead of failing write()
  rlimit cap = saved;
  cap.rlim_cur = 4096;
  BOOST_REQUIRE(::setrlimit(RLIMIT_FSIZE, &cap) == 0);
  std::string msg;
  try {
    save_safetensors(path, {{"big", zeros({10000})}});
  } catch (const Error& e) {
    msg = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, old_handler);
  BOOST_TEST(msg.find("cannot write") != std::string::npos, "message: " << msg);
  BOOST_TEST(read_file(path) == before);
  BOOST_TEST(dir.entries() == std::vector<std::string>{"t.safetensors"});
}

BOOST_AUTO_TEST_SUITE_END()
