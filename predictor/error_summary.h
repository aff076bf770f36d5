// Summary statistics: of a predictor's absolute percentage errors (APE), shared by the
// calibration fit's and the GBDT trainer's error reports, and the median every measurement
// summary uses. Pure functions; thread-safe.
#pragma once

#include <vector>

namespace psched::predictor {

struct ErrorSummary {
  int count = 0;
  double mape = 0;    // mean APE, percent
  double median = 0;  // the mean of the two middle values for an even count
  double p90 = 0;     // the value 90% of the way through the sorted errors
  double max = 0;
};

// All zero for no errors.
ErrorSummary SummarizeErrors(std::vector<double> apes);

// The middle value; the mean of the two middle values for an even count.
// REQUIRES: !values.empty().
double Median(std::vector<double> values);

}  // namespace psched::predictor
