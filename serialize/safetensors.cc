// safetensors files: the atomic writer and the validating reader (format in serialize/safetensors.h).
#include "serialize/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

namespace normlab::serialize {

using autograd::DType;
using autograd::Shape;
using autograd::Tensor;

// The data is written and read as raw bytes: both the format and the tensors are little-endian.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

using json = nlohmann::json;

// The reference implementation refuses headers above 100 MB; so do we (before allocating).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// Element types a file may hold that normlab reads.
enum class FileType { F32, F64, I32, I64 };

const char* type_name(FileType t) {
  switch (t) {
    case FileType::F32: return "F32";
    case FileType::F64: return "F64";
    case FileType::I32: return "I32";
    case FileType::I64: return "I64";
  }
  return "?";
}

size_t type_size(FileType t) { return t == FileType::F32 || t == FileType::I32 ? 4 : 8; }

std::string quote(const std::string& s) { return "'" + s + "'"; }

std::string errno_text(int err) { return std::strerror(err); }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ---- Writing ---------------------------------------------------------------------------------------

// Writes all n bytes to fd (write may write less than asked, or be interrupted).
bool write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// A temporary file next to the target, renamed over it on commit(); removed if never committed.
class AtomicFile {
 public:
  AtomicFile(const std::string& path, const std::string& op)
      : path_(path), tmp_(path + ".tmp." + std::to_string(::getpid())), op_(op) {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot create the temporary file " + quote(tmp_) + ": " + errno_text(errno));
  }
  ~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* p, size_t n) {
    if (!write_all(fd_, p, n)) fail("cannot write " + quote(tmp_) + ": " + errno_text(errno));
  }

  // fsync, close, rename over the target, then (best effort) fsync the directory so the rename
  // itself survives a crash.
  void commit() {
    if (::fsync(fd_) != 0) fail("cannot flush " + quote(tmp_) + " to disk: " + errno_text(errno));
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("cannot close " + quote(tmp_) + ": " + errno_text(errno));
    if (::rename(tmp_.c_str(), path_.c_str()) != 0)
      fail("cannot rename " + quote(tmp_) + " to the target: " + errno_text(errno));
    committed_ = true;
    const size_t slash = path_.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);  // the file is in place already; a failure here only weakens durability
      ::close(dfd);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(op_ + " " + quote(path_) + ": " + problem);
  }
  std::string path_, tmp_, op_;
  int fd_ = -1;
  bool committed_ = false;
};

// One tensor to write: its file type and, for I64, its values converted to integers.
struct OutTensor {
  const std::string* name;
  Tensor t;
  FileType type;
  std::vector<int64_t> ints;
};

// ---- Reading ---------------------------------------------------------------------------------------

// One validated header entry.
struct Entry {
  std::string name;
  FileType type;
  Shape shape;
  uint64_t begin, end;
};

// Parses the dtype string; false for anything normlab does not read.
bool parse_type(const std::string& s, FileType* t) {
  if (s == "F32") *t = FileType::F32;
  else if (s == "F64") *t = FileType::F64;
  else if (s == "I32") *t = FileType::I32;
  else if (s == "I64") *t = FileType::I64;
  else return false;
  return true;
}

// dtypes of the safetensors spec that normlab does not read (for a more precise message).
bool is_spec_type(const std::string& s) {
  static const std::set<std::string> spec = {"BOOL", "U8",  "I8",  "F8_E5M2", "F8_E4M3", "I16", "U16",
                                             "F16",  "BF16", "U32", "U64"};
  return spec.count(s) > 0;
}

// A JSON value for an error message, without recursing into nested values (a corrupt header may
// nest arrays a million deep, and dump() would recurse that deep).
std::string describe(const json& v) {
  if (!v.is_structured()) return v.dump();
  bool flat = v.size() <= 16;
  for (const json& e : v) flat = flat && !e.is_structured();
  if (flat) return v.dump();
  return std::string("a JSON ") + v.type_name() + " of " + std::to_string(v.size()) + " nested values";
}

// A JSON value that is a non-negative integer fitting in int64 (not 2.0, not true).
bool as_index(const json& v, uint64_t* out) {
  if (v.is_number_unsigned()) *out = v.get<uint64_t>();
  else if (v.is_number_integer() && v.get<int64_t>() >= 0) *out = static_cast<uint64_t>(v.get<int64_t>());
  else return false;
  return *out <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
}

// Parses JSON text, recording the first duplicate key of any object (nlohmann keeps the last
// value silently, which would hide a corrupt header).
json parse_header(const std::string& text, std::string* duplicate, int* duplicate_depth) {
  std::vector<std::set<std::string>> open;  // the keys seen so far in each enclosing object
  auto cb = [&](int depth, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) open.emplace_back();
    else if (ev == json::parse_event_t::object_end) open.pop_back();
    else if (ev == json::parse_event_t::key && !open.empty() && duplicate->empty()) {
      const std::string k = parsed.get<std::string>();
      if (!open.back().insert(k).second) {
        *duplicate = k;
        *duplicate_depth = depth;
      }
    }
    return true;
  };
  return json::parse(text, cb);
}

// Reads exactly n bytes at offset; false on an I/O error or a premature end of file.
bool read_at(int fd, void* p, size_t n, uint64_t offset) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = ::pread(fd, c, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return true;
}

// Closes a file descriptor on scope exit.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

// The error of load_safetensors for the file at path: "<path>: cannot read this safetensors file: <problem>".
[[noreturn]] void load_fail(const std::string& path, const std::string& problem) {
  throw Error(path + ": cannot read this safetensors file: " + problem);
}

// Checks that fd is a regular file of at least 8 bytes and reads the header length n, its first
// 8 bytes (little-endian), which must leave room for the header in the file and be at most
// kMaxHeaderBytes. Sets *size to the file's size.
uint64_t read_header_length(int fd, const std::string& path, uint64_t* size) {
  struct stat st;
  if (::fstat(fd, &st) != 0) load_fail(path, "cannot stat the file: " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) load_fail(path, "not a regular file");
  *size = static_cast<uint64_t>(st.st_size);
  if (*size < 8)
    load_fail(path, "the file is " + std::to_string(*size) + " bytes long, shorter than the 8-byte header length");
  unsigned char len_bytes[8];
  if (!read_at(fd, len_bytes, 8, 0)) load_fail(path, "cannot read the header length: " + errno_text(errno));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  if (n > *size - 8)
    load_fail(path, "truncated or corrupt: the header length says " + std::to_string(n) + " bytes but only " +
                        std::to_string(*size - 8) + " bytes follow it");
  if (n > kMaxHeaderBytes)
    load_fail(path, "the header length " + std::to_string(n) + " exceeds the limit of " +
                        std::to_string(kMaxHeaderBytes) + " bytes");
  return n;
}

// Reads the n-byte JSON header after the length and parses it: a JSON object, no key twice.
json read_header(int fd, const std::string& path, uint64_t n) {
  std::string text(n, '\0');
  if (!read_at(fd, text.data(), n, 8)) load_fail(path, "cannot read the header: " + errno_text(errno));
  json header;
  std::string duplicate;
  int duplicate_depth = 0;
  try {
    header = parse_header(text, &duplicate, &duplicate_depth);
  } catch (const json::exception& e) {
    load_fail(path, std::string("the header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object())
    load_fail(path, std::string("the header must be a JSON object, got a JSON ") + header.type_name());
  if (!duplicate.empty())
    load_fail(path, duplicate_depth == 1 ? "the tensor name " + quote(duplicate) + " appears twice in the header"
                                         : "the key " + quote(duplicate) + " appears twice in one header entry");
  return header;
}

// The "__metadata__" entry: an object of strings, into *metadata.
void read_metadata(const std::string& path, const json& v, std::map<std::string, std::string>* metadata) {
  if (!v.is_object()) load_fail(path, std::string("__metadata__ must be an object, got a JSON ") + v.type_name());
  for (const auto& [k, s] : v.items()) {
    if (!s.is_string()) load_fail(path, "__metadata__ value of " + quote(k) + " must be a string, got " + describe(s));
    (*metadata)[k] = s.get<std::string>();
  }
}

// A tensor entry's "shape" (what: "tensor '<name>'"): a list of non-negative integers, into
// *shape. Returns the number of elements, kept below 2^64 / 8 so that its bytes fit in 64 bits.
uint64_t read_shape(const std::string& path, const std::string& what, const json& sh, Shape* shape) {
  bool shape_ok = sh.is_array(), has_zero = false, overflow = false;
  uint64_t numel = 1;  // product of the non-zero dims, kept below 2^64 / 8
  if (shape_ok)
    for (const json& d : sh) {
      uint64_t di;
      if (!as_index(d, &di)) {
        shape_ok = false;
        break;
      }
      shape->push_back(static_cast<int64_t>(di));
      if (di == 0) has_zero = true;
      else if (numel > std::numeric_limits<uint64_t>::max() / 8 / di) overflow = true;
      else numel *= di;
    }
  if (!shape_ok) load_fail(path, what + ": shape must be a list of non-negative integers, got " + describe(sh));
  if (overflow) load_fail(path, what + ": shape " + describe(sh) + " has too many elements");
  return has_zero ? 0 : numel;
}

// Checks one tensor entry: {"dtype": one normlab reads, "shape": [...], "data_offsets": [begin,
// end]}, the offsets spanning exactly the bytes dtype and shape need, within the data area
// (data_size bytes).
Entry check_entry(const std::string& path, const std::string& name, const json& v, uint64_t data_size) {
  const std::string what = "tensor " + quote(name);
  if (!v.is_object()) load_fail(path, what + ": the entry must be an object, got " + describe(v));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) load_fail(path, what + ": the entry has no \"" + key + "\"");
  Entry e{name, FileType::F32, {}, 0, 0};
  const json& dt = v["dtype"];
  if (!dt.is_string()) load_fail(path, what + ": dtype must be a string, got " + describe(dt));
  const std::string ds = dt.get<std::string>();
  if (!parse_type(ds, &e.type))
    load_fail(path, what + (is_spec_type(ds) ? ": dtype " + ds + " is not supported" : ": unknown dtype " + quote(ds)) +
                        " (normlab reads F32, F64, I64 and I32)");
  const json& sh = v["shape"];
  const uint64_t want = read_shape(path, what, sh, &e.shape) * type_size(e.type);
  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !as_index(off[0], &e.begin) || !as_index(off[1], &e.end) ||
      e.end < e.begin)
    load_fail(path, what + ": data_offsets must be [begin, end] with 0 <= begin <= end, got " + describe(off));
  if (e.end - e.begin != want)
    load_fail(path, what + ": data_offsets " + describe(off) + " span " + std::to_string(e.end - e.begin) +
                        " bytes, but dtype " + ds + " and shape " + describe(sh) + " need " + std::to_string(want));
  if (e.end > data_size)
    load_fail(path, what + ": data_offsets " + describe(off) + " reach past the end of the data area (" +
                        std::to_string(data_size) + " bytes); the file is truncated or corrupt");
  return e;
}

// Sorts the entries by offset and checks that they tile the data area exactly: no overlap, no
// gap, nothing after the last tensor.
void check_tiling(const std::string& path, std::vector<Entry>& entries, uint64_t data_size) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < pos) load_fail(path, "the data of tensors " + quote(prev->name) + " and " + quote(e.name) + " overlap");
    if (e.begin > pos)
      load_fail(path, "bytes " + std::to_string(pos) + " to " + std::to_string(e.begin) +
                          " of the data area belong to no tensor");
    pos = e.end;
    if (e.end > e.begin || !prev) prev = &e;
  }
  if (pos != data_size)
    load_fail(path, "the data area is " + std::to_string(data_size) + " bytes but the tensors cover " +
                        std::to_string(pos) + " bytes");
}

// Reads a checked entry's data (at data_start + e.begin): F32 and F64 as they are, integers as
// float64 (exact for |values| <= 2^53).
Tensor read_tensor(int fd, const std::string& path, const Entry& e, uint64_t data_start) {
  const size_t bytes = e.end - e.begin;
  const uint64_t at = data_start + e.begin;
  if (e.type == FileType::F32 || e.type == FileType::F64) {
    Tensor t = autograd::empty(e.shape, e.type == FileType::F32 ? DType::Float32 : DType::Float64);
    if (!read_at(fd, t.raw_data(), bytes, at)) load_fail(path, "cannot read the data of tensor " + quote(e.name));
    return t;
  }
  Tensor t = autograd::empty(e.shape, DType::Float64);
  double* dst = t.data<double>();
  const int64_t count = t.numel();
  if (e.type == FileType::I64) {
    std::vector<int64_t> v(count);
    if (!read_at(fd, v.data(), bytes, at)) load_fail(path, "cannot read the data of tensor " + quote(e.name));
    for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<double>(v[i]);
  } else {
    std::vector<int32_t> v(count);
    if (!read_at(fd, v.data(), bytes, at)) load_fail(path, "cannot read the data of tensor " + quote(e.name));
    for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<double>(v[i]);
  }
  return t;
}

}  // namespace

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::string op = "save_safetensors";
  auto fail = [&](const std::string& problem) { throw Error(op + " " + quote(path) + ": " + problem); };

  // Check and convert everything before touching the disk.
  std::vector<OutTensor> out;
  std::set<std::string> names;
  for (const auto& [name, t] : tensors) {
    if (name.empty()) fail("a tensor has an empty name");
    if (name == "__metadata__") fail("'__metadata__' is reserved for the metadata and cannot name a tensor");
    if (!names.insert(name).second) fail("the tensor name " + quote(name) + " is given twice");
    if (!t.defined()) fail("tensor " + quote(name) + " is undefined");
    OutTensor o{&name, t, t.dtype() == DType::Float32 ? FileType::F32 : FileType::F64, {}};
    if (ends_with(name, "num_batches_tracked")) {
      // PyTorch keeps this counter as int64; store it so, for torch's load_state_dict.
      o.type = FileType::I64;
      const std::vector<double> v = t.to_vector();
      for (double x : v) {
        if (!std::isfinite(x) || x != std::floor(x) || std::fabs(x) >= 9.2e18)
          fail("tensor " + quote(name) + " is stored as I64 and must hold whole numbers, got " +
               std::to_string(x));
        o.ints.push_back(static_cast<int64_t>(x));
      }
    }
    out.push_back(std::move(o));
  }
  // 8-byte types first, so every tensor starts at a multiple of its element size.
  std::stable_sort(out.begin(), out.end(),
                   [](const OutTensor& a, const OutTensor& b) { return type_size(a.type) > type_size(b.type); });

  json header = json::object();  // keys come out sorted by name
  uint64_t offset = 0;
  for (const OutTensor& o : out) {
    const uint64_t bytes = static_cast<uint64_t>(o.t.numel()) * type_size(o.type);
    header[*o.name] = {{"dtype", type_name(o.type)},
                       {"shape", json(o.t.shape())},
                       {"data_offsets", json::array({offset, offset + bytes})}};
    offset += bytes;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {
    fail(std::string("a tensor name or metadata string is not valid UTF-8 (") + e.what() + ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned

  AtomicFile file(path, op);
  const uint64_t n = text.size();
  file.write(&n, 8);
  file.write(text.data(), text.size());
  for (const OutTensor& o : out) {
    if (o.type == FileType::I64) file.write(o.ints.data(), o.ints.size() * sizeof(int64_t));
    else file.write(o.t.raw_data(), static_cast<size_t>(o.t.numel()) * dtype_size(o.t.dtype()));
  }
  file.commit();
}

SafetensorsFile load_safetensors(const std::string& path) {
  // O_NONBLOCK: a named pipe then opens at once (and is refused as not a regular file) instead of
  // blocking until a writer comes; on a regular file it changes nothing.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) load_fail(path, "cannot open the file: " + errno_text(errno));
  FdCloser closer{fd};
  uint64_t size = 0;
  const uint64_t n = read_header_length(fd, path, &size);
  const json header = read_header(fd, path, n);

  // Every entry checked (in the header's key order) before any data is read.
  const uint64_t data_size = size - 8 - n;
  SafetensorsFile result;
  std::vector<Entry> entries;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") read_metadata(path, v, &result.metadata);
    else entries.push_back(check_entry(path, name, v, data_size));
  }
  check_tiling(path, entries, data_size);

  // Everything is consistent: read the data.
  for (const Entry& e : entries) result.tensors.emplace_back(e.name, read_tensor(fd, path, e, 8 + n));
  return result;
}

}  // namespace normlab::serialize
