// Fashion-MNIST: small gzip IDX files written here with zlib (valid and broken), and the real files if installed.
#include <boost/test/unit_test.hpp>
#include <sys/resource.h>
#include <zlib.h>

#include <filesystem>

#include "data/fashion_mnist.h"
#include "tests/data/support.h"
#include "tests/support/files.h"

using namespace normlab::data;
using normlab::test::check_mentions;
using normlab::test::error_of;
using normlab::test::read_file;
using normlab::test::TempDir;
using normlab::test::write_file;
namespace fs = std::filesystem;

namespace {

// Big-endian bytes of a 32-bit header value.
void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

// An IDX file: magic, then each dim, then the payload.
std::vector<uint8_t> idx(uint32_t magic, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out;
  put_u32(out, magic);
  for (uint32_t d : dims) put_u32(out, d);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  BOOST_REQUIRE(f);
  if (!bytes.empty()) BOOST_REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
                                    static_cast<int>(bytes.size()));
  BOOST_REQUIRE(gzclose(f) == Z_OK);
}

// n images of 28x28 where image i has pixel p = (i * 7 + p) % 256; labels given.
std::vector<uint8_t> pixels(int n) {
  std::vector<uint8_t> p(n * 784);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < 784; ++j) p[i * 784 + j] = static_cast<uint8_t>((i * 7 + j) % 256);
  return p;
}

// Writes a valid pair train-{images,labels} for these labels into dir, with the file names that
// load_fashion_mnist expects.
void write_pair(const TempDir& dir, const std::vector<uint8_t>& labels) {
  const uint32_t n = static_cast<uint32_t>(labels.size());
  write_gz(dir.file("train-images-idx3-ubyte.gz"), idx(2051, {n, 28, 28}, pixels(n)));
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), idx(2049, {n}, labels));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fashion_mnist)

BOOST_AUTO_TEST_CASE(valid_files_scale_pixels_and_keep_labels) {
  TempDir dir;
  write_pair(dir, {9, 0, 3});
  Dataset ds = load_fashion_mnist(FashionMnistSplit::Train, dir.path().string());
  BOOST_TEST(ds.size() == 3);
  BOOST_TEST(ds.features() == 784);
  BOOST_TEST(ds.labels == (std::vector<int64_t>{9, 0, 3}));
  BOOST_TEST(ds.num_classes == 10);
  BOOST_TEST(ds.class_names[9] == "Ankle boot");
  BOOST_TEST(ds.class_names[0] == "T-shirt/top");
  // Image 1 pixel 0 is 7 -> 7/255; image 2 pixel 250 is (14 + 250) % 256 = 8; image 0 pixel 255 is 255 -> 1.
  BOOST_TEST(ds.x.at({1, 0}) == 7.0f / 255.0f);
  BOOST_TEST(ds.x.at({2, 250}) == 8.0f / 255.0f);
  BOOST_TEST(ds.x.at({0, 255}) == 1.0);
  BOOST_TEST(ds.x.at({0, 0}) == 0.0);
  Dataset first2 = load_fashion_mnist(FashionMnistSplit::Train, dir.path().string(), 2);
  BOOST_TEST(first2.size() == 2);
  BOOST_TEST(first2.labels == (std::vector<int64_t>{9, 0}));
  BOOST_TEST(first2.x.at({1, 783}) == ds.x.at({1, 783}));
}

BOOST_AUTO_TEST_CASE(plain_idx_files_and_other_image_sizes_read_directly) {
  TempDir dir;
  const std::string path = dir.file("small-images");
  const std::vector<uint8_t> bytes = idx(2051, {2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  write_file(path, std::string(bytes.begin(), bytes.end()));
  IdxImages im = read_idx_images(path, 1);  // not gzip: zlib reads it as is
  BOOST_TEST(im.rows == 2);
  BOOST_TEST(im.cols == 3);
  BOOST_TEST(im.count == 1);
  BOOST_TEST(im.total == 2);
  BOOST_TEST(im.pixels == (std::vector<uint8_t>{1, 2, 3, 4, 5, 6}));
  check_mentions(error_of([&] { read_idx_images(path, 3); }), {path, "first 3 images", "holds 2"});
  check_mentions(error_of([&] { read_idx_images(path, 0); }), {path, "at least 1, got 0"});
}

BOOST_AUTO_TEST_CASE(missing_files_suggest_the_debian_package) {
  TempDir dir;
  check_mentions(error_of([&] { load_fashion_mnist(FashionMnistSplit::Test, dir.path().string()); }),
                 {dir.file("t10k-labels-idx1-ubyte.gz"), "no such file", "dataset-fashion-mnist"});
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), idx(2049, {1}, {1}));
  check_mentions(error_of([&] { load_fashion_mnist(FashionMnistSplit::Test, dir.path().string()); }),
                 {dir.file("t10k-images-idx3-ubyte.gz"), "no such file", "dataset-fashion-mnist"});
}

BOOST_AUTO_TEST_CASE(bad_magic_numbers) {
  TempDir dir;
  write_pair(dir, {1, 2});
  const std::string labels = dir.file("train-labels-idx1-ubyte.gz");
  write_gz(labels, idx(2051, {2}, {1, 2}));  // an image magic in a label file
  check_mentions(error_of([&] { load_fashion_mnist(FashionMnistSplit::Train, dir.path().string()); }),
                 {labels, "bad magic number 2051", "expected 2049"});
  write_pair(dir, {1, 2});
  const std::string images = dir.file("train-images-idx3-ubyte.gz");
  write_gz(images, idx(0x03080000, {2, 28, 28}, pixels(2)));  // byte-swapped magic
  check_mentions(error_of([&] { load_fashion_mnist(FashionMnistSplit::Train, dir.path().string()); }),
                 {images, "bad magic number 50855936", "expected 2051"});
}

BOOST_AUTO_TEST_CASE(truncated_and_oversized_files) {
  TempDir dir;
  write_pair(dir, {1, 2});
  const std::string images = dir.file("train-images-idx3-ubyte.gz");
  std::vector<uint8_t> short_body = pixels(2);
  short_body.resize(2 * 784 - 5);
  write_gz(images, idx(2051, {2, 28, 28}, short_body));
  check_mentions(error_of([&] { load_fashion_mnist(FashionMnistSplit::Train, dir.path().string()); }),
                 {images, "truncated", "declares 2 images", "1568 bytes", "only 1563"});
  // A limit does not skip the check of the rest of the file.
  check_mentions(error_of([&] { load_fashion_mnist(FashionMnistSplit::Train, dir.path().string(), 1); }),
                 {images, "truncated"});
  write_gz(images, idx(2051, {2, 28}, {}));  // header cut after the row count
  check_mentions(error_of([&] { load_fashion_mnist(FashionMnistSplit::Train, dir.path().string()); }),
                 {images, "truncated", "number of columns"});
  std::vector<uint8_t> long_body = pixels(2);
  long_body.push_back(0), long_body.push_back(0);
  write_gz(images, idx(2051, {2, 28, 28}, long_body));
  check_mentions(error_of([&] { load_fashion_mnist(FashionMnistSplit::Train, dir.path().string()); }),
                 {images, "unexpected bytes after the 2 images"});
  write_gz(images, {});
  check_mentions(error_of([&] { load_fashion_mnist(FashionMnistSplit::Train, dir.path().string()); }),
                 {images, "truncated", "magic number"});
}

BOOST_AUTO_TEST_CASE(corrupt_gzip_data) {
  TempDir dir;
  write_pair(dir, {1, 2});
  const std::string labels = dir.file("train-labels-idx1-ubyte.gz");
  // Damage the CRC in the gzip trailer (the last 8 bytes are CRC32 and size).
  std::string bytes = read_file(labels);
  bytes[bytes.size() - 8] ^= 0x5A;
  write_file(labels, bytes);
  check_mentions(error_of([&] { load_fashion_mnist(FashionMnistSplit::Train, dir.path().string()); }),
                 {labels, "corrupt gzip data"});
}

BOOST_AUTO_TEST_CASE(bytes_after_the_last_gzip_member_are_refused) {
  // zlib's gzread stops at the end of the last gzip member and ignores what follows, so a file with
  // bytes appended (or a second file glued on without a gzip header) once read as valid.
  TempDir dir;
  write_pair(dir, {1, 2});
  const std::string labels = dir.file("train-labels-idx1-ubyte.gz");
  const std::string valid = read_file(labels);
  for (const std::string& tail : {std::string("garbage"), std::string(1, '\0'), std::string("\x1f")}) {
    write_file(labels, valid + tail);
    check_mentions(error_of([&] { read_idx_labels(labels); }),
                   {labels, "unexpected bytes after the gzip data", "ends at byte " + std::to_string(valid.size()),
                    "of " + std::to_string(valid.size() + tail.size())});
    check_mentions(error_of([&] { read_idx_labels(labels, 1); }), {labels, "unexpected bytes after the gzip data"});
  }
  // Several gzip members (as `cat a.gz b.gz` makes) are one file: the labels split over two.
  const std::string part = dir.file("part.gz");
  const std::vector<uint8_t> whole = idx(2049, {3}, {4, 5, 6});
  write_gz(part, std::vector<uint8_t>(whole.begin(), whole.begin() + 9));
  const std::string first = read_file(part);
  write_gz(part, std::vector<uint8_t>(whole.begin() + 9, whole.end()));
  write_file(labels, first + read_file(part));
  BOOST_TEST(read_idx_labels(labels) == (std::vector<uint8_t>{4, 5, 6}), boost::test_tools::per_element());
}

// Peak resident memory of this process so far, in MiB.
int64_t peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

// Headers that declare far more than their file holds are refused without allocating what they
// declare (tests/data/fixtures/idx/make.py writes these files).
BOOST_AUTO_TEST_CASE(declared_sizes_are_not_trusted) {
  const std::string labels = normlab::test::fixture("idx/labels_declares_2600000000.idx");
  const std::string images = normlab::test::fixture("idx/images_declares_60000x200x200.gz");
  const std::string huge = normlab::test::fixture("idx/images_count_ffffffff.idx");
  const int64_t before = peak_rss_mib();
  check_mentions(error_of([&] { read_idx_labels(labels); }),
                 {labels, "truncated", "declares 2600000000 labels", "holds only 0"});
  check_mentions(error_of([&] { read_idx_images(images); }),
                 {images, "truncated", "declares 60000 images of 200x200", "holds only 0"});
  check_mentions(error_of([&] { read_idx_images(images, 10); }), {images, "truncated", "holds only 0"});
  // 4294967295 x 65536 x 65536 bytes: checked, not multiplied in int64.
  check_mentions(error_of([&] { read_idx_images(huge); }),
                 {huge, "declares 4294967295 images", "more than the 16 GiB"});
  // Declaring 2.4 GB used to cost 2.4 GB of memory before the refusal.
  BOOST_TEST(peak_rss_mib() - before < 200, "peak RSS grew by " << peak_rss_mib() - before << " MiB");
}

// zlib reports a gzip stream without its 8-byte trailer (CRC32 and size) only as a soft error.
BOOST_AUTO_TEST_CASE(gzip_without_its_trailer_is_truncated) {
  const std::string labels = normlab::test::fixture("idx/labels_no_trailer.gz");
  check_mentions(error_of([&] { read_idx_labels(labels); }), {labels, "truncated gzip file"});
}

BOOST_AUTO_TEST_CASE(count_mismatch_size_and_label_range) {
  TempDir dir;
  write_pair(dir, {1, 2, 3});
  const std::string images = dir.file("train-images-idx3-ubyte.gz");
  const std::string labels = dir.file("train-labels-idx1-ubyte.gz");
  write_gz(labels, idx(2049, {2}, {1, 2}));
  check_mentions(error_of([&] { load_fashion_mnist(FashionMnistSplit::Train, dir.path().string()); }),
                 {images, "3 images", labels, "2 labels"});
  write_gz(labels, idx(2049, {1}, {1}));
  write_gz(images, idx(2051, {1, 28, 27}, std::vector<uint8_t>(28 * 27)));
  check_mentions(error_of([&] { load_fashion_mnist(FashionMnistSplit::Train, dir.path().string()); }),
                 {images, "28x28", "28x27"});
  write_pair(dir, {4, 10});
  check_mentions(error_of([&] { load_fashion_mnist(FashionMnistSplit::Train, dir.path().string()); }),
                 {labels, "label 10", "sample 1", "0..9"});
  write_pair(dir, {4, 5});
  check_mentions(error_of([&] { load_fashion_mnist(FashionMnistSplit::Train, dir.path().string(), 3); }),
                 {labels, "first 3", "holds 2"});
}

// The installed data set. Its facts were read independently with Python's gzip module:
// train: 60000 images, first labels 9 0 0 3 0 2 7 2 5 5, first image's pixels sum to 76247;
// t10k: 10000 images, first label 9.
bool real_data_installed() { return fs::exists(kFashionMnistDir); }

BOOST_AUTO_TEST_CASE(real_fashion_mnist,
                     *boost::unit_test::precondition([](boost::unit_test::test_unit_id) -> boost::test_tools::assertion_result {
                       boost::test_tools::assertion_result r(real_data_installed());
                       r.message() << "SKIPPED: " << kFashionMnistDir
                                   << " is missing (install the Debian package dataset-fashion-mnist)";
                       return r;
                     })) {
  Dataset train = load_fashion_mnist(FashionMnistSplit::Train);
  BOOST_TEST(train.size() == 60000);
  BOOST_TEST(train.features() == 784);
  const std::vector<int64_t> first = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
  BOOST_TEST(std::vector<int64_t>(train.labels.begin(), train.labels.begin() + 10) == first);
  BOOST_TEST(train.class_names[train.labels[0]] == "Ankle boot");
  std::vector<int64_t> per_class(10, 0);
  for (int64_t l : train.labels) {
    BOOST_REQUIRE(l >= 0 && l < 10);
    ++per_class[l];
  }
  BOOST_TEST(per_class == std::vector<int64_t>(10, 6000));  // Fashion-MNIST is balanced
  double sum = 0, lo = 1, hi = 0;
  for (int64_t j = 0; j < 784; ++j) {
    const double v = train.x.at({0, j});
    sum += v, lo = std::min(lo, v), hi = std::max(hi, v);
  }
  BOOST_TEST(sum == 76247.0 / 255.0, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(lo == 0.0);
  BOOST_TEST(hi == 1.0);
  Dataset test = load_fashion_mnist(FashionMnistSplit::Test);
  BOOST_TEST(test.size() == 10000);
  BOOST_TEST(test.labels[0] == 9);
  Dataset sub = load_fashion_mnist(FashionMnistSplit::Train, kFashionMnistDir, 20000);
  BOOST_TEST(sub.size() == 20000);
  BOOST_TEST(sub.x.at({19999, 400}) == train.x.at({19999, 400}));
}

BOOST_AUTO_TEST_SUITE_END()
