#include "predictor/gbdt/training/measurements.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "predictor/gbdt/training/mobile_benchmark.h"
#include "source_dir.h"

namespace psched::predictor::gbdt::training {
namespace {

using ::testing::HasSubstr;

const std::string kTestdata = std::string(PSCHED_SOURCE_DIR) + "/predictor/gbdt/training/testdata/";
constexpr char kHeader[] =
    "group,kind,inputs,output,kernel_h,kernel_w,dilation_h,dilation_w,stride_h,stride_w,pad_top,"
    "pad_left,pad_bottom,pad_right,groups,accumulate,dev/gpu:us,dev/gpu:kernel\n";

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(MeasurementsTest, FixtureParsesIntoConfigsAndLatencies) {
  absl::StatusOr<OpTable> ops = ReadOpCsv(kTestdata + "ops.csv");
  ASSERT_TRUE(ops.ok()) << ops.status();
  EXPECT_EQ(ops->devices, std::vector<std::string>{"pixel4/gpu"});
  ASSERT_EQ(ops->rows.size(), 389u);
  // fdmobilenet_wd4's first op: a 3x3 stride-2 conv, 224x224x3 -> 112x112x8, 29.184 us.
  const OpRow& first = ops->rows[0];
  EXPECT_EQ(first.group, "fdmobilenet_wd4");
  EXPECT_EQ(first.line, 2);
  EXPECT_EQ(first.config.kind, model::OpKind::kConv2d);
  EXPECT_EQ(first.config.inputs[0], (model::Shape{224, 224, 3}));
  EXPECT_EQ(first.config.output, (model::Shape{112, 112, 8}));
  EXPECT_EQ(first.config.window.stride_h, 2);
  EXPECT_DOUBLE_EQ(first.config.flops, 2.0 * 112 * 112 * 8 * 9 * 3);
  EXPECT_DOUBLE_EQ(first.measured.at("pixel4/gpu").us, 29.184);
  EXPECT_EQ(first.measured.at("pixel4/gpu").kernel, "convolution_2d_0_linked_:_relu_1");
  absl::StatusOr<TotalsTable> totals = ReadTotalsCsv(kTestdata + "totals.csv");
  ASSERT_TRUE(totals.ok()) << totals.status();
  EXPECT_DOUBLE_EQ(totals->totals.at("squeezenet_v1_1").at("pixel4/1large"), 25853.7);
}

TEST(MeasurementsTest, WriteAndReadBackIsTheSameTable) {
  absl::StatusOr<OpTable> ops = ReadOpCsv(kTestdata + "ops.csv");
  ASSERT_TRUE(ops.ok());
  const std::string text = FormatOpCsv(*ops);
  absl::StatusOr<OpTable> again = ParseOpCsv(text, "again.csv");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(FormatOpCsv(*again), text);
}

TEST(MeasurementsTest, BadCsvNamesFileLineAndColumn) {
  const std::string good = "g,conv2d,8x8x4,8x8x8,3,3,1,1,1,1,1,1,1,1,1,0,12.5,k\n";
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {"group,kind,inputs,kernel_h\n", "bad.csv:1: missing column 'output'"},
      {std::string(kHeader) + good + "g,conv2d,8x8x4,8x8x8,three,3,1,1,1,1,1,1,1,1,1,0,12.5,k\n",
       "bad.csv:3: column 'kernel_h': 'three' is not an integer"},
      {std::string(kHeader) + "g,conv2d,8x8x4,8x8x8,3,3,1,1,1,1,1,1,1,1,1,0,fast,k\n",
       "bad.csv:2: column 'dev/gpu:us': 'fast' is not a number"},
      {std::string(kHeader) + "g,conv2d,8x8x4,8x8x8,3,3,1,1,1,1,1,1,1,1,1,0,-4,k\n",
       "bad.csv:2: column 'dev/gpu:us': -4 is not a latency"},
      {std::string(kHeader) + "g,conv2d,8x8x4,8x8x8,3,3,1,1\n",
       "bad.csv:2: 8 cells, the header has 18"},
      {std::string(kHeader) + "g,conv3d,8x8x4,8x8x8,3,3,1,1,1,1,1,1,1,1,1,0,12.5,k\n",
       "bad.csv:2: column 'kind': unknown op kind 'conv3d'"},
      {std::string(kHeader) + "g,conv2d,8x8,8x8x8,3,3,1,1,1,1,1,1,1,1,1,0,12.5,k\n",
       "bad.csv:2: column 'inputs': '8x8' is not a shape HxWxC"},
      {std::string(kHeader) + "g,conv2d,8x8x4,8x8x8,3,3,1,1,1,1,1,1,1,1,3,0,12.5,k\n",
       "bad.csv:2: column 'groups': 3 groups do not divide 4 input and 8 output channels"},
      {std::string(kHeader) + "\"g,conv2d,8x8x4\n", "bad.csv:2: unterminated quoted cell"},
      {"group,kind,inputs,output,kernel_h,kernel_w,dilation_h,dilation_w,stride_h,stride_w,pad_top,"
       "pad_left,pad_bottom,pad_right,groups,accumulate\n",
       "bad.csv:1: no '<device>:us' column"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<OpTable> t = ParseOpCsv(c.text, "bad.csv");
    ASSERT_FALSE(t.ok()) << c.message;
    EXPECT_THAT(Message(t.status()), HasSubstr(c.message));
  }
  absl::StatusOr<TotalsTable> dup = ParseTotalsCsv("group,d:us\na,1\na,2\n", "t.csv");
  ASSERT_FALSE(dup.ok());
  EXPECT_THAT(Message(dup.status()), HasSubstr("t.csv:3: column 'group': group 'a' appears twice"));
  EXPECT_THAT(Message(ReadOpCsv("/nonexistent/ops.csv").status()),
              HasSubstr("/nonexistent/ops.csv"));
}

// Lines of the phone data's op table, converted.
TEST(MobileBenchmarkTest, OperatorRowsBecomeConfigs) {
  const std::string text =
      "model,operation,feature,p|gpu|float,p|gpu|kernel\n"
      "m,DEPTHWISE_CONV_2D,\"{'Input_shape': '31', 'Input_channel': 384, 'Output_shape': '14', "
      "'Stride': '2', 'Kernel': '5', 'Filter': '1', 'Group': '1', 'FLOPS': '3763200'}\","
      "122.2272,depthwise_convolution_31_linked_:_relu_32\n"
      "m,CONCATENATION,\"{'Input_shape': '28', 'Input_channel': 64, 'Output_shape': '28', "
      "'Stride': '-', 'Kernel': '4', 'Filter': '256', 'Group': '-', 'FLOPS': "
      "'-'}\",42.3936,concat_25\n"
      "m,MEAN,\"{'Input_shape': '27', 'Input_channel': 2048, 'Output_shape': '2048', 'Stride': "
      "'-', "
      "'Kernel': '0', 'Filter': '-', 'Group': '-', 'FLOPS': '1492992'}\",352.8064,mean_121\n"
      "m,FULLY_CONNECTED,\"{'Input_shape': '-', 'Input_channel': 2048, 'Output_shape': '-', "
      "'Stride': '-', 'Kernel': '-', 'Filter': '1000', 'Group': '-', 'FLOPS': "
      "'4096000'}\",159.5904,"
      "fully_connected_122\n";
  absl::StatusOr<OpTable> t = ParseMobileBenchmarkOps(text, "ops_gpu.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->rows.size(), 4u);
  const OpConfig& dw = t->rows[0].config;
  EXPECT_TRUE(dw.IsDepthwise());
  EXPECT_EQ(dw.output, (model::Shape{14, 14, 384}));
  EXPECT_DOUBLE_EQ(dw.flops, 3763200.0);  // the data's own FLOPs count
  EXPECT_EQ(t->rows[0].measured.at("p/gpu").kernel, "depthwise_convolution_31_linked_:_relu_32");
  const OpConfig& concat = t->rows[1].config;
  ASSERT_EQ(concat.inputs.size(), 4u);
  EXPECT_EQ(concat.inputs[0].c + concat.inputs[1].c + concat.inputs[2].c + concat.inputs[3].c, 256);
  EXPECT_EQ(t->rows[2].config.kind, model::OpKind::kGlobalAvgPool);
  EXPECT_EQ(t->rows[2].config.output, (model::Shape{1, 1, 2048}));
  EXPECT_EQ(t->rows[3].config.kind, model::OpKind::kFullyConnected);
  EXPECT_DOUBLE_EQ(t->rows[3].config.flops, 4096000.0);
}

TEST(MobileBenchmarkTest, BadRowsNameFileAndLine) {
  const std::string header = "model,operation,feature,p|gpu|float\n";
  absl::StatusOr<OpTable> t =
      ParseMobileBenchmarkOps(header + "m,CONV_2D,\"{'Input_shape': 'x'}\",1.0\n", "ops_gpu.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(Message(t.status()), HasSubstr("ops_gpu.csv:2: feature 'Input_channel' is missing"));
  t = ParseMobileBenchmarkOps(header +
                                  "m,CONV_3D,\"{'Input_shape': '8', 'Input_channel': 4, "
                                  "'Output_shape': '8', 'Stride': '1', 'Kernel': '1', "
                                  "'Filter': '4', 'Group': '1'}\",1.0\n",
                              "ops_gpu.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(Message(t.status()), HasSubstr("ops_gpu.csv:2: unknown operation 'CONV_3D'"));
  t = ParseMobileBenchmarkOps("model,operation\n", "ops_gpu.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(Message(t.status()), HasSubstr("ops_gpu.csv:1: missing column 'feature'"));
  absl::StatusOr<TotalsTable> e2e =
      ParseMobileBenchmarkTotals("model,p|1large|float|mean\nm,slow\n", "e2e.csv");
  ASSERT_FALSE(e2e.ok());
  EXPECT_THAT(Message(e2e.status()), HasSubstr("e2e.csv:2: column 'p|1large|float|mean': 'slow'"));
}

}  // namespace
}  // namespace psched::predictor::gbdt::training
