// psched::client::Session from C++: registers an ONNX model with pschedd, feeds every input
// a ramp of values, and prints each output's dims and the index of its largest value.
//
//   session_example MODEL.onnx [SOCKET]
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "client/session.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s MODEL.onnx [SOCKET]\n", argv[0]);
    return 2;
  }
  psched::client::ClientOptions options;
  if (argc == 3) options.socket = argv[2];
  auto session = psched::client::Session::Create(argv[1], options);
  if (!session.ok()) {
    std::fprintf(stderr, "%s\n", session.status().ToString().c_str());
    return 1;
  }
  std::map<std::string, psched::client::Tensor> feed;
  for (const psched::client::TensorSpec& input : session->inputs()) {
    psched::client::Tensor tensor{input.dims, {}};
    int64_t n = 1;
    for (int64_t d : input.dims) n *= d;
    for (int64_t i = 0; i < n; ++i) tensor.data.push_back(static_cast<float>(i % 17) / 17.0f);
    feed.emplace(input.name, std::move(tensor));
  }
  auto outputs = session->Run(feed);
  if (!outputs.ok()) {
    std::fprintf(stderr, "%s\n", outputs.status().ToString().c_str());
    return 1;
  }
  for (size_t i = 0; i < outputs->size(); ++i) {
    const psched::client::Tensor& out = (*outputs)[i];
    const auto largest = std::max_element(out.data.begin(), out.data.end());
    std::printf("%s: dims", session->outputs()[i].name.c_str());
    for (int64_t d : out.dims) std::printf(" %lld", static_cast<long long>(d));
    std::printf(", argmax %lld\n", static_cast<long long>(largest - out.data.begin()));
  }
  return 0;
}
