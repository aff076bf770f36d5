#include "executor/npy.h"

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "source_dir.h"

namespace psched::executor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string SharedDir() {
  const char* dir = std::getenv("PSCHED_SHARED_DIR");
  return dir != nullptr ? dir : PSCHED_SOURCE_DIR "/../shared";
}

TEST(Npy, RoundTripsShapesAndValues) {
  for (const NpyArray& a : {NpyArray{{2, 3}, {1, 2, 3, 4, 5, -6.5f}}, NpyArray{{4}, {1, 2, 3, 4}},
                            NpyArray{{}, {7}}, NpyArray{{0, 5}, {}}}) {
    auto bytes = SerializeNpy(a);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    // numpy requires the data to start on a 64-byte boundary.
    EXPECT_EQ((bytes->size() - a.data.size() * 4) % 64, 0u);
    auto back = ParseNpy(*bytes);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->shape, a.shape);
    EXPECT_EQ(back->data, a.data);
  }
}

// fuzz_npy's first finding: an array with a zero dimension copied from a null buffer.
TEST(Npy, ZeroSizedArrayFromAHandWrittenHeader) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (0,1,3 , 08, 1)}";
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size());
  bytes += '\0';
  bytes += header;
  auto array = ParseNpy(bytes);
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_EQ(array->shape, (std::vector<int64_t>{0, 1, 3, 8, 1}));
  EXPECT_TRUE(array->data.empty());
}

TEST(Npy, WritesWhatNumpyWrites) {
  auto bytes = SerializeNpy({{2}, {1.0f, 2.0f}});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->substr(0, 10), std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  EXPECT_THAT(*bytes, HasSubstr("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"));
}

TEST(Npy, ReadsTheStoredReferenceInput) {
  auto a = ReadNpy(SharedDir() + "/models/reference/squeezenet_v1_1.input.npy");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->shape, ElementsAre(1, 3, 224, 224));
  EXPECT_EQ(a->data.size(), 3u * 224 * 224);
}

std::string WithHeader(const std::string& dict, size_t data_bytes) {
  std::string header = dict;
  header.append((10 + header.size() + 1 + 63) / 64 * 64 - 11 - header.size(), ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size()));
  out.push_back('\0');
  return out + header + std::string(data_bytes, '\0');
}

TEST(Npy, RejectsWhatItCannotRead) {
  EXPECT_THAT(ParseNpy("hello world").status().ToString(), HasSubstr("missing \\x93NUMPY"));
  EXPECT_THAT(ParseNpy(WithHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16))
                  .status()
                  .ToString(),
              HasSubstr("dtype '<f8' is not supported"));
  EXPECT_THAT(ParseNpy(WithHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8))
                  .status()
                  .ToString(),
              HasSubstr("Fortran order"));
  EXPECT_THAT(ParseNpy(WithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8))
                  .status()
                  .ToString(),
              HasSubstr("holds 8 bytes, shape (3) needs 12"));
  EXPECT_THAT(ParseNpy(WithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (x,), }", 8))
                  .status()
                  .ToString(),
              HasSubstr("bad dimension 'x'"));
  EXPECT_THAT(
      ParseNpy(WithHeader("{'descr': '<f4', 'fortran_order': False, }", 8)).status().ToString(),
      HasSubstr("no 'shape' entry"));
  EXPECT_EQ(ReadNpy("/nonexistent/file.npy").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(SerializeNpy({{3}, {1, 2}}).status().ToString(), HasSubstr("holds 2 values"));
}

}  // namespace
}  // namespace psched::executor
