// Non-negative least squares: min ||A x - b|| subject to x >= 0 (Lawson and Hanson's
// active-set method), for the small dense systems of baseline fitting (a few dozen
// unknowns). Columns are scaled to unit norm internally, so unknowns of very different
// magnitude (us per MFLOP vs a constant us) are handled alike. Pure and thread-safe.
#pragma once

#include <cstddef>
#include <vector>

namespace psched::predictor::gbdt::training {

// A dense row-major matrix.
struct Matrix {
  int rows = 0;
  int cols = 0;
  std::vector<double> data;
  Matrix(int r, int c) : rows(r), cols(c), data(static_cast<std::size_t>(r) * c, 0.0) {}
  double& at(int r, int c) { return data[static_cast<std::size_t>(r) * cols + c]; }
  double at(int r, int c) const { return data[static_cast<std::size_t>(r) * cols + c]; }
};

// REQUIRES: b.size() == a.rows. Columns that are all zero get 0.
std::vector<double> Nnls(const Matrix& a, const std::vector<double>& b);

}  // namespace psched::predictor::gbdt::training
