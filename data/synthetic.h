// Seeded synthetic 2-D (and d-D) classification sets: spirals, moons, circles, Gaussian blobs, XOR.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace normlab::data {

// Every generator: n samples split as evenly as possible over the classes (class c gets
// n / k + (c < n % k)), rows shuffled, Gaussian noise of standard deviation `noise` added to each
// coordinate, and the same (arguments, seed) giving the same data set bit for bit.

/// Two interleaved spirals (2 classes), `turns` turns each: radius r = t, angle 2 pi turns t + pi c,
/// t = sqrt(u) with u uniform in [0.0025, 1] (points even per area), x = r (cos, sin) + noise.
Dataset make_spirals(int64_t n, double noise, uint64_t seed, double turns = 1.5);

/// Two interleaving half circles (2 classes), as scikit-learn's make_moons: class 0 is
/// (cos a, sin a), class 1 is (1 - cos a, 0.5 - sin a), a uniform in [0, pi].
Dataset make_moons(int64_t n, double noise, uint64_t seed);

/// Two concentric circles (2 classes): class 0 radius 1, class 1 radius `factor` in (0, 1), angle
/// uniform in [0, 2 pi).
Dataset make_circles(int64_t n, double noise, uint64_t seed, double factor = 0.5);

/// k Gaussian blobs in d dimensions: centres uniform in [-box, box]^d (drawn first), then each
/// sample its class centre + noise (noise is the blobs' standard deviation).
Dataset make_blobs(int64_t n, double noise, uint64_t seed, int64_t k = 3, int64_t d = 2, double box = 5.0);

/// XOR (2 classes): points uniform in [-1, 1]^2, class = sign(x0) != sign(x1); class 0 in the
/// quadrants (+, +) and (-, -), class 1 in (+, -) and (-, +), each quadrant equally likely.
Dataset make_xor(int64_t n, double noise, uint64_t seed);

/// The names make_synthetic accepts: "spirals", "moons", "circles", "blobs", "xor".
const std::vector<std::string>& synthetic_names();

/// The generator called `name` with its default extra arguments; unknown names list the known ones.
Dataset make_synthetic(const std::string& name, int64_t n, double noise, uint64_t seed);

}  // namespace normlab::data
