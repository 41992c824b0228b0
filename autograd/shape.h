// Shapes: sizes of a tensor's dims, broadcasting rules and dim normalization (as in PyTorch).
#pragma once
#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace normlab::autograd {

// The sizes of a tensor's dims: a vector of int64_t that keeps up to kInline dims inline (no heap
// allocation: ops copy shapes into every output and graph node, tens of times per training step)
// and moves to the heap beyond. The subset of std::vector's interface the codebase uses.
class Shape {
 public:
  using value_type = int64_t;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = int64_t&;
  using const_reference = const int64_t&;
  using pointer = int64_t*;
  using const_pointer = const int64_t*;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;
  static constexpr size_t kInline = 8;

  Shape() = default;
  // n dims of size v (as std::vector's count constructor).
  explicit Shape(size_t n, int64_t v = 0) { assign(n, v); }
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
  template <std::input_iterator It>
  Shape(It first, It last) { assign(first, last); }
  Shape(const std::vector<int64_t>& v) { assign(v.begin(), v.end()); }  // NOLINT: implicit, as the alias was
  Shape(const Shape& o) { copy_from(o); }
  Shape(Shape&& o) noexcept { take(o); }
  Shape& operator=(const Shape& o) {
    if (this != &o) copy_from(o);
    return *this;
  }
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) {
      free_heap();
      take(o);
    }
    return *this;
  }
  Shape& operator=(std::initializer_list<int64_t> dims) {
    assign(dims.begin(), dims.end());
    return *this;
  }
  ~Shape() { free_heap(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return cap_; }
  int64_t* data() { return data_; }
  const int64_t* data() const { return data_; }
  int64_t& operator[](size_t i) { return data_[i]; }
  const int64_t& operator[](size_t i) const { return data_[i]; }
  int64_t& front() { return data_[0]; }
  const int64_t& front() const { return data_[0]; }
  int64_t& back() { return data_[size_ - 1]; }
  const int64_t& back() const { return data_[size_ - 1]; }
  iterator begin() { return data_; }
  iterator end() { return data_ + size_; }
  const_iterator begin() const { return data_; }
  const_iterator end() const { return data_ + size_; }
  const_iterator cbegin() const { return data_; }
  const_iterator cend() const { return data_ + size_; }
  reverse_iterator rbegin() { return reverse_iterator(end()); }
  reverse_iterator rend() { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }

  void reserve(size_t n) {
    if (n > cap_) grow(n);
  }
  void clear() { size_ = 0; }
  void resize(size_t n, int64_t v = 0) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = v;
    size_ = n;
  }
  void assign(size_t n, int64_t v) {
    size_ = 0;
    resize(n, v);
  }
  template <std::input_iterator It>
  void assign(It first, It last) {
    size_ = 0;
    if constexpr (std::forward_iterator<It>) {
      const size_t n = static_cast<size_t>(std::distance(first, last));
      reserve(n);
      std::copy(first, last, data_);
      size_ = n;
    } else {
      for (; first != last; ++first) push_back(*first);
    }
  }
  void push_back(int64_t v) {
    if (size_ == cap_) grow(2 * cap_);
    data_[size_++] = v;
  }
  void pop_back() { --size_; }
  // Inserts v before pos; returns an iterator to it.
  iterator insert(const_iterator pos, int64_t v) { return insert(pos, &v, &v + 1); }
  // Inserts [first, last) before pos (the range must not be inside this shape); returns an
  // iterator to the first inserted dim.
  template <std::forward_iterator It>
  iterator insert(const_iterator pos, It first, It last) {
    const size_t at = static_cast<size_t>(pos - data_), n = static_cast<size_t>(std::distance(first, last));
    reserve(size_ + n);
    std::move_backward(data_ + at, data_ + size_, data_ + size_ + n);
    std::copy(first, last, data_ + at);
    size_ += n;
    return data_ + at;
  }
  iterator insert(const_iterator pos, std::initializer_list<int64_t> dims) {
    return insert(pos, dims.begin(), dims.end());
  }
  // Removes [first, last); returns an iterator to the dim after them.
  iterator erase(const_iterator first, const_iterator last) {
    const size_t a = static_cast<size_t>(first - data_), b = static_cast<size_t>(last - data_);
    std::move(data_ + b, data_ + size_, data_ + a);
    size_ -= b - a;
    return data_ + a;
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }

  // The dims as a std::vector (for APIs that take one).
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }

  friend bool operator==(const Shape& a, const Shape& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend std::strong_ordering operator<=>(const Shape& a, const Shape& b) {
    return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  // Moves o's dims here (this holds no heap block) and leaves o empty.
  void take(Shape& o) noexcept {
    size_ = o.size_;
    if (o.data_ == o.inline_) {
      data_ = inline_;
      cap_ = kInline;
      std::memcpy(inline_, o.inline_, sizeof inline_);
    } else {
      data_ = o.data_;
      cap_ = o.cap_;
      o.data_ = o.inline_;
      o.cap_ = kInline;
    }
    o.size_ = 0;
  }
  // Copies o's dims here. Up to kInline dims, the whole first kInline slots are copied (every block
  // holds at least kInline): a fixed-size copy the compiler inlines as a few vector moves, where a
  // copy of size() dims would be a call to memmove.
  void copy_from(const Shape& o) {
    if (o.size_ <= kInline) {
      std::memcpy(data_, o.data_, sizeof inline_);
      size_ = o.size_;
    } else {
      assign(o.begin(), o.end());
    }
  }
  void grow(size_t n) {
    n = std::max(n, kInline);
    int64_t* p = new int64_t[n]();  // zeroed, as inline_
    std::copy(data_, data_ + size_, p);
    free_heap();
    data_ = p;
    cap_ = n;
  }
  void free_heap() {
    if (data_ != inline_) delete[] data_;
  }

  int64_t* data_ = inline_;
  size_t size_ = 0;
  size_t cap_ = kInline;
  int64_t inline_[kInline] = {};  // zeroed: copy_from copies all of it
};

// Number of elements (1 for rank 0).
int64_t numel(const Shape& s);
// "[2, 3]", as PyTorch prints torch.Size.
std::string shape_str(const Shape& s);
// Python's repr of a shape as a tuple, as PyTorch's module reprs print one: (3,), (2, 3).
std::string py_tuple(const Shape& s);
// The index of flat (row-major) position `flat` in shape s: {1, 2} for 5 in (2, 3). Printed as
// py_tuple it is "(1, 2)", as shape_str "[1, 2]".
std::vector<int64_t> unravel_index(int64_t flat, const Shape& s);
// Row-major strides, in elements.
std::vector<int64_t> contiguous_strides(const Shape& s);
// The broadcast of two shapes (NumPy rules); throws naming `op` and both shapes if they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);
// Maps dim in [-rank, rank) to [0, rank); throws "op: dim d out of range for a tensor of rank r".
int64_t normalize_dim(int64_t dim, int64_t rank, std::string_view op);
// Throws unless every size is >= 0 (the message names `op`). (op is a string_view: the ops pass
// literals, which then need no std::string built per call.)
void check_shape(const Shape& s, std::string_view op);

}  // namespace normlab::autograd
