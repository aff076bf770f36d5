#include "predictor/error_summary.h"

#include <algorithm>

namespace psched::predictor {

ErrorSummary SummarizeErrors(std::vector<double> apes) {
  ErrorSummary s;
  s.count = static_cast<int>(apes.size());
  if (apes.empty()) return s;
  std::sort(apes.begin(), apes.end());
  double sum = 0;
  for (double a : apes) sum += a;
  s.mape = sum / static_cast<double>(apes.size());
  const size_t mid = apes.size() / 2;
  s.median = apes.size() % 2 == 1 ? apes[mid] : 0.5 * (apes[mid - 1] + apes[mid]);
  s.p90 = apes[std::min(apes.size() - 1, apes.size() * 9 / 10)];
  s.max = apes.back();
  return s;
}

}  // namespace psched::predictor
