#include <chrono>
#include <cstring>
#include <iostream>
#include <numeric>

#include "client/pschedctl/commands.h"
#include "client/pschedctl/output.h"
#include "client/pschedctl/timelines.h"
#include "executor/npy.h"
#include "timeline/chrome_trace.h"

namespace psched::pschedctl {

void CmdInfer(const Globals& g, const std::string& id, const std::string& input_path,
              const std::string& output_path, int repeat, const std::string& trace_path,
              const std::string& scheduler) {
  if (repeat < 1) throw CommandError{"--repeat must be at least 1"};
  v1::InferRequest request;
  request.set_model_id(id);
  request.set_scheduler(scheduler);
  request.set_want_trace(!trace_path.empty());
  if (!input_path.empty()) {
    psched::executor::NpyArray array = Check(psched::executor::ReadNpy(input_path));
    v1::Tensor* tensor = request.add_inputs();
    for (int64_t d : array.shape) tensor->add_dims(d);
    tensor->set_data(std::string(reinterpret_cast<const char*>(array.data.data()),
                                 array.data.size() * sizeof(float)));
  }
  auto client = Connect(g);
  std::vector<double> latencies, client_latencies;
  v1::InferResponse response;
  for (int i = 0; i < repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    response = Check(client.Infer(request));
    client_latencies.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
    latencies.push_back(response.latency_us());
  }
  auto mean = [](const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  };
  json outputs = json::array();
  for (const v1::Tensor& t : response.outputs()) {
    std::vector<float> values(t.data().size() / sizeof(float));
    std::memcpy(values.data(), t.data().data(), values.size() * sizeof(float));
    outputs.push_back({{"name", t.name()},
                       {"dims", std::vector<int64_t>(t.dims().begin(), t.dims().end())},
                       {"top5", Top5(values)}});
  }
  if (!output_path.empty() && response.outputs_size() > 0) {
    const v1::Tensor& t = response.outputs(0);
    psched::executor::NpyArray array;
    array.shape.assign(t.dims().begin(), t.dims().end());
    array.data.resize(t.data().size() / sizeof(float));
    std::memcpy(array.data.data(), t.data().data(), array.data.size() * sizeof(float));
    CheckStatus(psched::executor::WriteNpy(output_path, array));
  }
  if (!trace_path.empty()) {
    CheckStatus(timeline::WriteChromeTrace(trace_path, InferTimeline(response)));
  }
  if (g.json()) {
    PrintJson({{"latency_us", mean(latencies)},
               {"client_latency_us", mean(client_latencies)},
               {"execute_us", response.execute_us()},
               {"queue_us", response.queue_us()},
               {"executor", response.executor()},
               {"scheduler", response.scheduler()},
               {"predicted_makespan_us", response.predicted_makespan_us()},
               {"repeat", repeat},
               {"outputs", outputs}});
    return;
  }
  std::cout << "latency " << Fixed(mean(latencies)) << " us in the daemon, "
            << Fixed(mean(client_latencies)) << " us at the client (mean of " << repeat
            << "), executor " << response.executor() << " " << Fixed(response.execute_us())
            << " us\n";
  if (response.predicted_makespan_us() > 0) {
    std::cout << "plan " << response.scheduler() << ": measured " << Fixed(response.execute_us())
              << " us, predicted " << Fixed(response.predicted_makespan_us()) << " us (x"
              << Fixed(response.execute_us() / response.predicted_makespan_us(), 2) << ")\n";
  }
  for (const json& o : outputs) {
    std::cout << o["name"].get<std::string>() << " " << o["dims"].dump() << " top-5:";
    for (const json& entry : o["top5"]) {
      std::cout << " " << entry[0].get<size_t>() << "=" << Fixed(entry[1].get<double>(), 4);
    }
    std::cout << "\n";
  }
}

}  // namespace psched::pschedctl
