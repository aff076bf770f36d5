#include "predictor/gbdt/training/nnls.h"

#include <algorithm>
#include <cmath>

namespace psched::predictor::gbdt::training {
namespace {

// Least squares over the columns `cols` of `a` by Householder QR; returns one value per
// listed column. Rank-deficient directions get 0.
std::vector<double> LeastSquares(const Matrix& a, const std::vector<int>& cols,
                                 const std::vector<double>& b) {
  const int m = a.rows;
  const int n = static_cast<int>(cols.size());
  std::vector<double> q(static_cast<size_t>(m) * n);  // column-major working copy
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i)
      q[static_cast<size_t>(j) * m + i] = a.at(i, cols[static_cast<size_t>(j)]);
  }
  std::vector<double> rhs = b;
  std::vector<double> diag(static_cast<size_t>(n), 0.0);
  for (int k = 0; k < n && k < m; ++k) {
    double* col = &q[static_cast<size_t>(k) * m];
    double norm = 0;
    for (int i = k; i < m; ++i) norm += col[i] * col[i];
    norm = std::sqrt(norm);
    if (norm < 1e-300) continue;
    const double alpha = col[k] > 0 ? -norm : norm;
    col[k] -= alpha;
    double vnorm = 0;
    for (int i = k; i < m; ++i) vnorm += col[i] * col[i];
    diag[static_cast<size_t>(k)] = alpha;
    if (vnorm < 1e-300) continue;
    auto reflect = [&](double* v) {
      double dot = 0;
      for (int i = k; i < m; ++i) dot += col[i] * v[i];
      const double f = 2.0 * dot / vnorm;
      for (int i = k; i < m; ++i) v[i] -= f * col[i];
    };
    for (int j = k + 1; j < n; ++j) reflect(&q[static_cast<size_t>(j) * m]);
    reflect(rhs.data());
  }
  // Back substitution on R (diagonal in `diag`, above it in q).
  std::vector<double> x(static_cast<size_t>(n), 0.0);
  const double scale = std::abs(diag.empty() ? 0.0 : diag[0]);
  for (int k = std::min(n, m) - 1; k >= 0; --k) {
    const double r = diag[static_cast<size_t>(k)];
    if (std::abs(r) <= 1e-12 * std::max(scale, 1e-300)) continue;
    double s = rhs[static_cast<size_t>(k)];
    for (int j = k + 1; j < n; ++j)
      s -= q[static_cast<size_t>(j) * m + k] * x[static_cast<size_t>(j)];
    x[static_cast<size_t>(k)] = s / r;
  }
  return x;
}

}  // namespace

std::vector<double> Nnls(const Matrix& a_in, const std::vector<double>& b) {
  const int n = a_in.cols;
  Matrix a = a_in;
  std::vector<double> norm(static_cast<size_t>(n), 0.0);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < a.rows; ++i) norm[static_cast<size_t>(j)] += a.at(i, j) * a.at(i, j);
    norm[static_cast<size_t>(j)] = std::sqrt(norm[static_cast<size_t>(j)]);
    if (norm[static_cast<size_t>(j)] > 0) {
      for (int i = 0; i < a.rows; ++i) a.at(i, j) /= norm[static_cast<size_t>(j)];
    }
  }
  std::vector<double> x(static_cast<size_t>(n), 0.0);
  std::vector<char> passive(static_cast<size_t>(n), 0);
  auto gradient = [&] {
    std::vector<double> r = b;
    for (int i = 0; i < a.rows; ++i) {
      for (int j = 0; j < n; ++j)
        r[static_cast<size_t>(i)] -= a.at(i, j) * x[static_cast<size_t>(j)];
    }
    std::vector<double> w(static_cast<size_t>(n), 0.0);
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < a.rows; ++i)
        w[static_cast<size_t>(j)] += a.at(i, j) * r[static_cast<size_t>(i)];
    }
    return w;
  };
  constexpr double kTolerance = 1e-12;
  for (int outer = 0; outer < 3 * n + 10; ++outer) {
    const std::vector<double> w = gradient();
    int best = -1;
    for (int j = 0; j < n; ++j) {
      if (!passive[static_cast<size_t>(j)] && norm[static_cast<size_t>(j)] > 0 &&
          w[static_cast<size_t>(j)] > kTolerance &&
          (best < 0 || w[static_cast<size_t>(j)] > w[static_cast<size_t>(best)])) {
        best = j;
      }
    }
    if (best < 0) break;
    passive[static_cast<size_t>(best)] = 1;
    for (int inner = 0; inner < 3 * n + 10; ++inner) {
      std::vector<int> cols;
      for (int j = 0; j < n; ++j) {
        if (passive[static_cast<size_t>(j)]) cols.push_back(j);
      }
      const std::vector<double> zp = LeastSquares(a, cols, b);
      std::vector<double> z(static_cast<size_t>(n), 0.0);
      for (size_t k = 0; k < cols.size(); ++k) z[static_cast<size_t>(cols[k])] = zp[k];
      double alpha = 1.0;
      bool feasible = true;
      for (int j : cols) {
        const auto u = static_cast<size_t>(j);
        if (z[u] <= kTolerance) {
          feasible = false;
          alpha = std::min(alpha, x[u] / std::max(x[u] - z[u], 1e-300));
        }
      }
      if (feasible) {
        x = z;
        break;
      }
      for (int j = 0; j < n; ++j) {
        const auto u = static_cast<size_t>(j);
        x[u] += alpha * (z[u] - x[u]);
        if (passive[u] && x[u] <= kTolerance) {
          passive[u] = 0;
          x[u] = 0;
        }
      }
    }
  }
  for (int j = 0; j < n; ++j) {
    const auto u = static_cast<size_t>(j);
    x[u] = norm[u] > 0 ? std::max(0.0, x[u]) / norm[u] : 0.0;
  }
  return x;
}

}  // namespace psched::predictor::gbdt::training
