// Fashion-MNIST from Debian's dataset-fashion-mnist: gzip IDX files read with zlib, checked, pixels in [0, 1].
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace normlab::data {

/// Where Debian's package dataset-fashion-mnist installs the four files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// Which of the two Fashion-MNIST sets: train (60000 images) or test (t10k, 10000 images).
enum class FashionMnistSplit { Train, Test };

/// The ten class names, by label: 0 "T-shirt/top", ..., 9 "Ankle boot".
const std::vector<std::string>& fashion_mnist_class_names();

/// The images of an IDX3 file (magic 2051): count x rows x cols unsigned bytes, row-major.
struct IdxImages {
  int64_t count = 0;             ///< images read (the first `limit`, or all)
  int64_t total = 0;             ///< images the file holds (its header's count)
  /// Image height.
  int64_t rows = 0, cols = 0;  ///< image width
  std::vector<uint8_t> pixels;   ///< (count, rows * cols)
};

/// Reads an IDX3 image file (gzip-compressed or plain), checking the magic number, the dims and
/// that the file holds exactly the declared number of images. limit: keep only the first `limit`
/// images (the whole file is still checked). Errors name the file and what is wrong.
IdxImages read_idx_images(const std::string& path, std::optional<int64_t> limit = std::nullopt);

/// Reads an IDX1 label file (magic 2049), with the same checks; returns the first `limit` labels.
/// total (if given) receives the label count the header declares.
std::vector<uint8_t> read_idx_labels(const std::string& path, std::optional<int64_t> limit = std::nullopt,
                                     int64_t* total = nullptr);

/// Pairs an image file with a label file (same count, 28x28 images, labels 0..9) into a Dataset:
/// x (N, 784) with pixels / 255 in [0, 1], labels in [0, 10), the Fashion-MNIST class names.
Dataset load_idx_pair(const std::string& images_path, const std::string& labels_path,
                      std::optional<int64_t> limit, const std::string& name);

/// Loads {dir}/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz. limit: the first `limit` samples
/// (>= 1 and at most the file's count). A missing file says how to install the package.
Dataset load_fashion_mnist(FashionMnistSplit split, const std::string& dir = kFashionMnistDir,
                           std::optional<int64_t> limit = std::nullopt);

}  // namespace normlab::data
