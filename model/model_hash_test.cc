#include "model/model_hash.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace psched::model {
namespace {

std::string SharedDir() {
  const char* dir = std::getenv("PSCHED_SHARED_DIR");
  return dir != nullptr ? dir : "/work/shared";
}

// FIPS 180-2 appendix B vectors, plus the empty message.
TEST(ModelHashTest, KnownVectors) {
  EXPECT_EQ(ModelHash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(ModelHash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(ModelHash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(ModelHash(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the 55/56/64-byte padding boundaries, checked against coreutils sha256sum.
TEST(ModelHashTest, PaddingBoundaries) {
  const std::pair<int, const char*> cases[] = {
      {55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
      {56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"},
      {63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"},
      {64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"},
      {119, "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c"},
  };
  for (const auto& [length, expected] : cases) {
    EXPECT_EQ(ModelHash(std::string(static_cast<size_t>(length), 'x')), expected) << length;
  }
}

TEST(ModelHashTest, OneWeightByteChangesTheId) {
  std::ifstream file(SharedDir() + "/models/reference/squeezenet_v1_1.onnx", std::ios::binary);
  std::stringstream contents;
  contents << file.rdbuf();
  const std::string bytes = contents.str();
  ASSERT_GT(bytes.size(), 1000000u);
  const std::string id = ModelHash(bytes);
  EXPECT_EQ(id.size(), 64u);
  EXPECT_EQ(id, ModelHash(std::string(bytes)));
  std::string changed = bytes;
  // Weights are the bulk of the file; the middle byte lies inside a weight tensor.
  changed[changed.size() / 2] ^= 0x01;
  EXPECT_NE(ModelHash(changed), id);
}

TEST(ModelHashTest, ModelIdIsTheBytesHashUnlessInputShapesAreBound) {
  const std::string bytes = "onnx bytes";
  EXPECT_EQ(ModelId(bytes, ""), ModelHash(bytes));
  const std::string bound = ModelId(bytes, R"({"x":[1,3,224,224]})");
  EXPECT_EQ(bound.size(), 64u);
  EXPECT_NE(bound, ModelHash(bytes));
  EXPECT_EQ(bound, ModelId(bytes, R"({"x":[1,3,224,224]})"));
  EXPECT_NE(bound, ModelId(bytes, R"({"x":[1,3,256,256]})"));
  EXPECT_NE(bound, ModelId("other bytes", R"({"x":[1,3,224,224]})"));
}

}  // namespace
}  // namespace psched::model
