// Fashion-MNIST: reads and checks the gzip IDX files (magic numbers, dims, counts, sizes) with zlib.
// Sizes in a header are not trusted: products are checked for overflow and a limit, and memory grows
// only with the bytes that actually arrive, so a short file declaring billions of items costs
// nothing before it is refused.
#include "data/fashion_mnist.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

namespace normlab::data {

namespace {

constexpr uint32_t kImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dims
constexpr uint32_t kLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dim

// The largest body (bytes after the header) read: 16 GiB, far above any IDX data set (Fashion-MNIST's
// training images are 47 MB) and below what would overflow the float32 copy's size.
constexpr uint64_t kMaxBodyBytes = uint64_t{1} << 34;
// Bytes read (and memory grown) per step.
constexpr uint64_t kChunkBytes = uint64_t{1} << 22;

// An open gzip file (one or more gzip members, as gzip writes them) or a plain file (read as is);
// every error names the file. zlib's gzread ignores whatever follows the last gzip member, so the
// members are inflated here: bytes after the last one that do not start another are an error.
class GzFile {
 public:
  explicit GzFile(const std::string& path, const std::string& hint) : path_(path), in_(1 << 17) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec))
      throw Error(path + ": no such file" + (hint.empty() ? "" : "; " + hint));
    if (!fs::is_regular_file(path, ec)) throw Error(path + ": is not a regular file");
    errno = 0;
    file_ = std::fopen(path.c_str(), "rb");
    if (!file_) throw Error(path + ": cannot open: " + std::strerror(errno));
    fill(2);
    gzip_ = z_.avail_in >= 2 && in_[0] == 0x1f && in_[1] == 0x8b;
    if (gzip_ && inflateInit2(&z_, 15 + 16) != Z_OK) {  // 15 + 16: a gzip wrapper
      std::fclose(file_);
      throw Error(path + ": cannot open: zlib could not allocate");
    }
  }
  ~GzFile() {
    if (gzip_) inflateEnd(&z_);
    if (file_) std::fclose(file_);
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  // Reads up to n bytes (fewer only at the end of the data); throws on corrupt data.
  int64_t read(void* buf, int64_t n) {
    auto* out = static_cast<unsigned char*>(buf);
    int64_t done = 0;
    while (done < n && !ended_) {
      const int64_t got = gzip_ ? inflate_some(out + done, n - done) : copy_some(out + done, n - done);
      done += got;
    }
    return done;
  }
  // Reads n bytes or throws "truncated", saying what was being read.
  void read_exact(void* buf, int64_t n, const std::string& what) {
    const int64_t got = read(buf, n);
    if (got != n)
      throw Error(path_ + ": truncated: expected " + what + " (" + std::to_string(n) +
                  " bytes), the file ends after " + std::to_string(got));
  }

  // Reads what is left, but at most `limit` bytes, and returns how many bytes that was.
  uint64_t count_rest(uint64_t limit) {
    std::vector<char> scratch(1 << 20);
    uint64_t total = 0;
    while (total < limit) {
      const int64_t want = static_cast<int64_t>(std::min<uint64_t>(scratch.size(), limit - total));
      const int64_t got = read(scratch.data(), want);
      if (got <= 0) break;
      total += static_cast<uint64_t>(got);
    }
    return total;
  }

  const std::string& path() const { return path_; }

 private:
  // Tops the input up to at least `want` bytes when the file has them (fewer at its end).
  void fill(size_t want) {
    if (z_.avail_in >= want) return;
    if (z_.avail_in > 0) std::memmove(in_.data(), z_.next_in, z_.avail_in);
    z_.next_in = in_.data();
    while (z_.avail_in < want) {
      const size_t got = std::fread(in_.data() + z_.avail_in, 1, in_.size() - z_.avail_in, file_);
      if (got == 0) {
        if (std::ferror(file_)) throw Error(path_ + ": cannot read: " + std::strerror(errno));
        return;
      }
      z_.avail_in += static_cast<uInt>(got);
      consumed_ += got;
    }
  }

  // A plain file: its bytes as they are.
  int64_t copy_some(unsigned char* out, int64_t n) {
    fill(1);
    if (z_.avail_in == 0) return ended_ = true, 0;
    const uInt k = static_cast<uInt>(std::min<int64_t>(n, z_.avail_in));
    std::memcpy(out, z_.next_in, k);
    z_.next_in += k, z_.avail_in -= k;
    return k;
  }

  // Inflates into out; at the end of a member, starts the next one or checks that the file ends.
  int64_t inflate_some(unsigned char* out, int64_t n) {
    fill(1);
    if (z_.avail_in == 0)
      throw Error(path_ + ": truncated gzip file (unexpected end of file; the compressed data or its CRC and size "
                  "trailer is missing)");
    z_.next_out = out;
    z_.avail_out = static_cast<uInt>(std::min<int64_t>(n, 1 << 30));
    const uInt before = z_.avail_out;
    const int rc = inflate(&z_, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
      throw Error(path_ + ": corrupt gzip data (" + (z_.msg ? z_.msg : "zlib error " + std::to_string(rc)) + ")");
    const int64_t got = before - z_.avail_out;
    if (rc == Z_STREAM_END) next_member();
    return got;
  }

  // After a member: the end of the file, another member, or bytes that are neither (an error).
  void next_member() {
    fill(2);
    if (z_.avail_in == 0) {
      ended_ = true;
      return;
    }
    if (z_.avail_in >= 2 && z_.next_in[0] == 0x1f && z_.next_in[1] == 0x8b) {
      inflateReset(&z_);
      return;
    }
    const uint64_t at = consumed_ - z_.avail_in;
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path_, ec);
    throw Error(path_ + ": unexpected bytes after the gzip data: the compressed stream ends at byte " +
                std::to_string(at) + (ec ? "" : " of " + std::to_string(size)) +
                ", and what follows is not another gzip member (a damaged or appended-to file)");
  }

  std::string path_;
  std::FILE* file_ = nullptr;
  std::vector<unsigned char> in_;  // input read from the file, not yet used: z_.next_in, z_.avail_in
  z_stream z_{};
  uint64_t consumed_ = 0;  // bytes read from the file so far
  bool gzip_ = false;
  bool ended_ = false;  // no more data
};

// Big-endian 32-bit unsigned, as IDX stores its header.
uint32_t read_u32(GzFile& f, const std::string& what) {
  unsigned char b[4];
  f.read_exact(b, 4, what);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

void check_magic(GzFile& f, uint32_t want, const std::string& kind) {
  const uint32_t magic = read_u32(f, "the 4-byte magic number of an IDX file");
  if (magic != want)
    throw Error(f.path() + ": bad magic number " + std::to_string(magic) + " (expected " +
                std::to_string(want) + " for an IDX " + kind + " file)");
}

// Checks limit against the header's count; returns how many items to keep. clamp: keep at most
// count instead of refusing a larger limit (the caller checks counts itself).
int64_t items_to_keep(const GzFile& f, int64_t count, std::optional<int64_t> limit, const std::string& items,
                      bool clamp = false) {
  if (!limit) return count;
  if (clamp && *limit > count) return count;
  if (*limit < 1)
    throw Error(f.path() + ": the number of " + items + " to read must be at least 1, got " +
                std::to_string(*limit));
  if (*limit > count)
    throw Error(f.path() + ": asked for the first " + std::to_string(*limit) + " " + items +
                ", but the file holds " + std::to_string(count));
  return *limit;
}

// Reads `keep` items of `item_bytes` into out, then checks that exactly count - keep more follow.
// out grows chunk by chunk as bytes arrive, and the rest is counted only up to one byte past the
// declared size: memory and time are bounded by the file, not by its header.
void read_body(GzFile& f, uint64_t count, uint64_t keep, uint64_t item_bytes, const std::string& items,
               std::vector<uint8_t>& out) {
  uint64_t declared = 0;
  if (__builtin_mul_overflow(count, item_bytes, &declared) || declared > kMaxBodyBytes)
    throw Error(f.path() + ": the header declares " + std::to_string(count) + " " + items + " (" +
                std::to_string(count) + " x " + std::to_string(item_bytes) +
                " bytes), more than the 16 GiB an IDX file may hold here");
  const uint64_t want = keep * item_bytes;  // keep <= count, so no overflow
  out.clear();
  out.reserve(std::min(want, kChunkBytes * 16));  // address space only: pages are touched as filled
  uint64_t got = 0;
  while (got < want) {
    const uint64_t step = std::min(want - got, kChunkBytes);
    out.resize(got + step);
    const uint64_t n = static_cast<uint64_t>(f.read(out.data() + got, static_cast<int64_t>(step)));
    got += n;
    if (n < step) break;
  }
  out.resize(got);
  const uint64_t rest = got == want ? f.count_rest(declared - got + 1) : 0;
  const uint64_t body = got + rest;
  if (body < declared)
    throw Error(f.path() + ": truncated: the header declares " + std::to_string(count) + " " + items +
                " (" + std::to_string(declared) + " bytes after the header), the file holds only " +
                std::to_string(body));
  if (body > declared)
    throw Error(f.path() + ": unexpected bytes after the " + std::to_string(count) + " " + items +
                " the header declares (" + std::to_string(declared) + " bytes after the header)");
}

}  // namespace

const std::vector<std::string>& fashion_mnist_class_names() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                 "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

namespace {

const char* kInstallHint =
    "install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist), "
    "or give the directory that holds the IDX files";

IdxImages read_images(const std::string& path, std::optional<int64_t> limit, const std::string& hint,
                      bool clamp) {
  GzFile f(path, hint);
  check_magic(f, kImagesMagic, "image (idx3-ubyte)");
  IdxImages im;
  const int64_t count = im.total = read_u32(f, "the image count");
  im.rows = read_u32(f, "the number of rows");
  im.cols = read_u32(f, "the number of columns");
  if (im.rows < 1 || im.cols < 1 || im.rows > 65536 || im.cols > 65536)
    throw Error(path + ": bad image size " + std::to_string(im.rows) + "x" + std::to_string(im.cols));
  im.count = items_to_keep(f, count, limit, "images", clamp);
  read_body(f, count, im.count, im.rows * im.cols, "images of " + std::to_string(im.rows) + "x" +
                                                         std::to_string(im.cols), im.pixels);
  return im;
}

std::vector<uint8_t> read_labels(const std::string& path, std::optional<int64_t> limit, int64_t* total,
                                 const std::string& hint) {
  GzFile f(path, hint);
  check_magic(f, kLabelsMagic, "label (idx1-ubyte)");
  const int64_t count = read_u32(f, "the label count");
  if (total) *total = count;
  std::vector<uint8_t> labels;
  read_body(f, count, items_to_keep(f, count, limit, "labels"), 1, "labels", labels);
  return labels;
}

Dataset load_pair(const std::string& images_path, const std::string& labels_path,
                  std::optional<int64_t> limit, const std::string& name, const std::string& hint) {
  // The label file is small: read it first (checking limit against its count), then only the
  // images needed (the rest of the image file is still decompressed to check its size).
  int64_t label_count = 0;
  std::vector<uint8_t> labels = read_labels(labels_path, limit, &label_count, hint);
  IdxImages im = read_images(images_path, limit, hint, /*clamp=*/true);
  if (im.total != label_count)
    throw Error(images_path + " holds " + std::to_string(im.total) + " images but " + labels_path +
                " holds " + std::to_string(label_count) + " labels (expected the same count)");
  if (im.rows != 28 || im.cols != 28)
    throw Error(images_path + ": expected 28x28 Fashion-MNIST images, got " + std::to_string(im.rows) +
                "x" + std::to_string(im.cols));
  const int64_t n = im.count;
  const int64_t d = im.rows * im.cols;
  Dataset ds;
  ds.name = name;
  ds.num_classes = 10;
  ds.class_names = fashion_mnist_class_names();
  ds.labels.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    if (labels[i] > 9)
      throw Error(labels_path + ": label " + std::to_string(labels[i]) + " of sample " + std::to_string(i) +
                  " is outside 0..9");
    ds.labels[i] = labels[i];
  }
  ds.x = autograd::empty({n, d});
  float* x = ds.x.data<float>();
  for (int64_t i = 0; i < n * d; ++i) x[i] = static_cast<float>(im.pixels[i]) / 255.0f;
  return ds;
}

}  // namespace

IdxImages read_idx_images(const std::string& path, std::optional<int64_t> limit) {
  return read_images(path, limit, "", /*clamp=*/false);
}

std::vector<uint8_t> read_idx_labels(const std::string& path, std::optional<int64_t> limit, int64_t* total) {
  return read_labels(path, limit, total, "");
}

Dataset load_idx_pair(const std::string& images_path, const std::string& labels_path,
                      std::optional<int64_t> limit, const std::string& name) {
  return load_pair(images_path, labels_path, limit, name, "");
}

Dataset load_fashion_mnist(FashionMnistSplit split, const std::string& dir, std::optional<int64_t> limit) {
  std::error_code ec;
  if (!dir.empty() && std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
    throw Error(dir + ": is not a folder; expected the folder that holds the Fashion-MNIST IDX files (*-ubyte.gz)");
  const std::string prefix = split == FashionMnistSplit::Train ? "train" : "t10k";
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  return load_pair(base + prefix + "-images-idx3-ubyte.gz", base + prefix + "-labels-idx1-ubyte.gz", limit,
                   split == FashionMnistSplit::Train ? "fashion-mnist train" : "fashion-mnist test",
                   kInstallHint);
}

}  // namespace normlab::data
