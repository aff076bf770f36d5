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
  s.median = Median(apes);
  s.p90 = apes[std::min(apes.size() - 1, apes.size() * 9 / 10)];
  s.max = apes.back();
  return s;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

}  // namespace psched::predictor
