// pschedctl's output: aligned tables and indented JSON on stdout, and the JSON form of each
// API message (the -o json output documented in docs/api.md). Internal to pschedctl.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "google/protobuf/repeated_field.h"
#include "nlohmann/json.hpp"
#include "psched/v1/admin.pb.h"
#include "psched/v1/model.pb.h"
#include "psched/v1/plan.pb.h"

namespace psched::pschedctl {

using nlohmann::json;

// "[1, 3, 224, 224]".
std::string Dims(const google::protobuf::RepeatedField<int64_t>& dims);
// The first 12 characters of a model id.
std::string Short(const std::string& id);
// `value` with `digits` decimals.
std::string Fixed(double value, int digits = 1);
// "1.5 GiB", "320.0 MiB", "12 bytes".
std::string HumanBytes(int64_t bytes);

// Left-aligned columns sized to their widest cell.
void PrintTable(const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows);
void PrintJson(const json& value);

json DeviceJson(const v1::Device& device);
json CacheJson(const v1::CacheStatsResponse& stats);
json ModelJson(const v1::Model& model);
json PlanJson(const v1::Plan& plan);
json MemoryJson(const v1::PlanMemory& memory);
json ResourcesJson(const v1::ResourceUsage& resources);
// The five largest values of a tensor with their flat indices: [[index, value], ...].
json Top5(const std::vector<float>& values);

}  // namespace psched::pschedctl
