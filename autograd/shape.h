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

/// A tensor's shape: a small vector of int64_t dims.
/// The sizes of a tensor's dims: a vector of int64_t that keeps up to kInline dims inline (no heap
/// allocation: ops copy shapes into every output and graph node, tens of times per training step)
/// and moves to the heap beyond. The subset of std::vector's interface the codebase uses.
class Shape {
 public:
  using value_type = int64_t;  ///< The element type, int64_t.
  using size_type = size_t;  ///< The type of size() (size_t).
  using difference_type = std::ptrdiff_t;  ///< The distance between two iterators.
  using reference = int64_t&;  ///< A reference to a dim.
  using const_reference = const int64_t&;  ///< A const reference to a dim.
  using pointer = int64_t*;  ///< A pointer to a dim.
  using const_pointer = const int64_t*;  ///< A const pointer to a dim.
  using iterator = int64_t*;  ///< A random-access iterator over the dims (a pointer).
  using const_iterator = const int64_t*;  ///< A const iterator over the dims.
  using reverse_iterator = std::reverse_iterator<iterator>;  ///< An iterator over the dims from the last.
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;  ///< A const iterator over the dims from the last.
  static constexpr size_t kInline = 8;  ///< Dims kept inline, without a heap allocation.

  Shape() = default;  ///< An empty shape (rank 0).
  /// n dims of size v (as std::vector's count constructor).
  explicit Shape(size_t n, int64_t v = 0) { assign(n, v); }
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }  ///< The dims listed: Shape{2, 3}.
  template <std::input_iterator It>
  Shape(It first, It last) { assign(first, last); }  ///< The dims of the range [first, last).
  /// The dims of a std::vector (implicit, so APIs taking a std::vector-like shape accept one).
  Shape(const std::vector<int64_t>& v) { assign(v.begin(), v.end()); }  // NOLINT: implicit, as the alias was
  Shape(const Shape& o) { copy_from(o); }  ///< A copy of o.
  Shape(Shape&& o) noexcept { take(o); }  ///< Takes o's dims, leaving o empty.
  /// Copies o.
  Shape& operator=(const Shape& o) {
    if (this != &o) copy_from(o);
    return *this;
  }
  /// Takes o's dims, leaving o empty.
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) {
      free_heap();
      take(o);
    }
    return *this;
  }
  /// Replaces the dims with the listed ones.
  Shape& operator=(std::initializer_list<int64_t> dims) {
    assign(dims.begin(), dims.end());
    return *this;
  }
  ~Shape() { free_heap(); }  ///< Frees the heap block, if any.

  size_t size() const { return size_; }  ///< Number of dims (the rank).
  bool empty() const { return size_ == 0; }  ///< True for rank 0.
  size_t capacity() const { return cap_; }  ///< Dims that fit without growing.
  int64_t* data() { return data_; }  ///< Pointer to the first dim.
  const int64_t* data() const { return data_; }  ///< Pointer to the first dim.
  int64_t& operator[](size_t i) { return data_[i]; }  ///< Size of dim i (unchecked).
  const int64_t& operator[](size_t i) const { return data_[i]; }  ///< Size of dim i (unchecked).
  int64_t& front() { return data_[0]; }  ///< The first dim.
  const int64_t& front() const { return data_[0]; }  ///< The first dim.
  int64_t& back() { return data_[size_ - 1]; }  ///< The last dim.
  const int64_t& back() const { return data_[size_ - 1]; }  ///< The last dim.
  iterator begin() { return data_; }  ///< Iterator to the first dim.
  iterator end() { return data_ + size_; }  ///< Iterator past the last dim.
  const_iterator begin() const { return data_; }  ///< Iterator to the first dim.
  const_iterator end() const { return data_ + size_; }  ///< Iterator past the last dim.
  const_iterator cbegin() const { return data_; }  ///< Const iterator to the first dim.
  const_iterator cend() const { return data_ + size_; }  ///< Const iterator past the last dim.
  reverse_iterator rbegin() { return reverse_iterator(end()); }  ///< Reverse iterator to the last dim.
  reverse_iterator rend() { return reverse_iterator(begin()); }  ///< Reverse iterator before the first dim.
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }  ///< Reverse iterator to the last dim.
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }  ///< Reverse iterator before the first dim.

  /// Makes room for n dims.
  void reserve(size_t n) {
    if (n > cap_) grow(n);
  }
  void clear() { size_ = 0; }  ///< Removes every dim.
  /// Keeps the first n dims, or appends dims of size v up to n.
  void resize(size_t n, int64_t v = 0) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = v;
    size_ = n;
  }
  /// Replaces the dims with n dims of size v.
  void assign(size_t n, int64_t v) {
    size_ = 0;
    resize(n, v);
  }
  /// Replaces the dims with those of the range [first, last).
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
  /// Appends a dim of size v.
  void push_back(int64_t v) {
    if (size_ == cap_) grow(2 * cap_);
    data_[size_++] = v;
  }
  void pop_back() { --size_; }  ///< Removes the last dim.
  /// Inserts v before pos; returns an iterator to it.
  iterator insert(const_iterator pos, int64_t v) { return insert(pos, &v, &v + 1); }
  /// Inserts [first, last) before pos (the range must not be inside this shape); returns an
  /// iterator to the first inserted dim.
  template <std::forward_iterator It>
  iterator insert(const_iterator pos, It first, It last) {
    const size_t at = static_cast<size_t>(pos - data_), n = static_cast<size_t>(std::distance(first, last));
    reserve(size_ + n);
    std::move_backward(data_ + at, data_ + size_, data_ + size_ + n);
    std::copy(first, last, data_ + at);
    size_ += n;
    return data_ + at;
  }
  /// Inserts the listed dims before pos; returns an iterator to the first.
  iterator insert(const_iterator pos, std::initializer_list<int64_t> dims) {
    return insert(pos, dims.begin(), dims.end());
  }
  /// Removes [first, last); returns an iterator to the dim after them.
  iterator erase(const_iterator first, const_iterator last) {
    const size_t a = static_cast<size_t>(first - data_), b = static_cast<size_t>(last - data_);
    std::move(data_ + b, data_ + size_, data_ + a);
    size_ -= b - a;
    return data_ + a;
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }  ///< Removes the dim at pos; returns an iterator to the dim after it.

  /// The dims as a std::vector (for APIs that take one).
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }

  /// True when both have the same dims.
  friend bool operator==(const Shape& a, const Shape& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  /// Lexicographic order of the dims.
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

/// Number of elements (1 for rank 0).
int64_t numel(const Shape& s);
/// "[2, 3]", as PyTorch prints torch.Size.
std::string shape_str(const Shape& s);
/// Python's repr of a shape as a tuple, as PyTorch's module reprs print one: (3,), (2, 3).
std::string py_tuple(const Shape& s);
/// The index of flat (row-major) position `flat` in shape s: {1, 2} for 5 in (2, 3). Printed as
/// py_tuple it is "(1, 2)", as shape_str "[1, 2]".
std::vector<int64_t> unravel_index(int64_t flat, const Shape& s);
/// Row-major strides, in elements.
std::vector<int64_t> contiguous_strides(const Shape& s);
/// The broadcast of two shapes (NumPy rules); throws naming `op` and both shapes if they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);
/// Maps dim in [-rank, rank) to [0, rank); throws "op: dim d out of range for a tensor of rank r".
int64_t normalize_dim(int64_t dim, int64_t rank, std::string_view op);
/// Throws unless every size is >= 0 (the message names `op`). (op is a string_view: the ops pass
/// literals, which then need no std::string built per call.)
void check_shape(const Shape& s, std::string_view op);

}  // namespace normlab::autograd
