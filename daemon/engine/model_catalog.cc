#include "daemon/engine/model_catalog.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "daemon/engine/budgets.h"
#include "daemon/engine/status_context.h"
#include "model/model_hash.h"
#include "spdlog/spdlog.h"

namespace psched::daemon {

ModelCatalog::ModelCatalog(cache::Store* store, Backend* backend, int max_loaded_models,
                           int64_t max_loaded_bytes)
    : store_(store),
      backend_(backend),
      max_loaded_models_(max_loaded_models),
      max_loaded_bytes_(max_loaded_bytes) {}

absl::StatusOr<std::string> ModelCatalog::Resolve(const std::string& id_or_prefix) {
  {
    sync::MutexLock lock(&mu_);
    if (loaded_.contains(id_or_prefix)) return id_or_prefix;
  }
  return store_->ResolveModelId(id_or_prefix);
}

absl::StatusOr<std::shared_ptr<const LoadedModel>> ModelCatalog::Loaded(const std::string& id) {
  {
    sync::MutexLock lock(&mu_);
    auto it = loaded_.find(id);
    if (it != loaded_.end()) {
      it->second.last_used = ++use_clock_;
      return it->second.model;
    }
  }
  absl::StatusOr<cache::ModelRecord> record = ReadIntact(id);
  if (!record.ok()) return record.status();
  LoadOptions load;
  load.synthesize_weights = record->synthesize_weights;
  // Checked with the bytes by ReadIntact: the id covers both.
  absl::StatusOr<model::InputShapes> input_shapes =
      model::ParseInputShapesKey(record->input_shapes);
  if (!input_shapes.ok()) {
    return WithContext(input_shapes.status(), absl::StrCat("stored model ", id));
  }
  load.input_shapes = *std::move(input_shapes);
  // Accepted when registered: bytes stored by an older pschedd may be graph-only.
  load.refuse_external_data = false;
  absl::StatusOr<LoadedModel> loaded = backend_->Load(record->onnx, record->name, load);
  if (!loaded.ok()) {
    return WithContext(loaded.status(), absl::StrCat("cannot re-import stored model ", id));
  }
  sync::MutexLock lock(&mu_);
  return KeepLocked(id, std::make_shared<const LoadedModel>(std::move(*loaded)));
}

std::shared_ptr<const LoadedModel> ModelCatalog::Keep(const std::string& id,
                                                      std::shared_ptr<const LoadedModel> model) {
  sync::MutexLock lock(&mu_);
  return KeepLocked(id, std::move(model));
}

std::shared_ptr<const LoadedModel> ModelCatalog::KeepLocked(
    const std::string& id, std::shared_ptr<const LoadedModel> model) {
  auto [it, inserted] = loaded_.emplace(id, LoadedEntry{std::move(model), 0});
  it->second.last_used = ++use_clock_;
  std::shared_ptr<const LoadedModel> kept = it->second.model;
  UnloadBeyondBoundsLocked(id);
  return kept;
}

int ModelCatalog::UnloadBeyondBounds(const std::string& keep) {
  sync::MutexLock lock(&mu_);
  return UnloadBeyondBoundsLocked(keep);
}

int ModelCatalog::UnloadBeyondBoundsLocked(const std::string& keep) {
  int64_t bytes = LoadedBytesLocked();
  int unloaded = 0;
  while (loaded_.size() > 1 && (loaded_.size() > static_cast<size_t>(max_loaded_models_) ||
                                (max_loaded_bytes_ > 0 && bytes > max_loaded_bytes_))) {
    auto oldest = loaded_.end();
    for (auto it = loaded_.begin(); it != loaded_.end(); ++it) {
      if (it->first == keep) continue;
      if (oldest == loaded_.end() || it->second.last_used < oldest->second.last_used) oldest = it;
    }
    if (oldest == loaded_.end()) break;
    const int64_t freed = backend_->ResidentBytes(*oldest->second.model);
    if (loaded_.size() > static_cast<size_t>(max_loaded_models_)) {
      spdlog::info("model {} unloaded (more than max_loaded_models = {} in use)", oldest->first,
                   max_loaded_models_);
    } else {
      spdlog::info(
          "model {} unloaded ({}): loaded models and compiled plans held {} bytes, over "
          "max_loaded_bytes = {}",
          oldest->first, FormatBytes(freed), bytes, max_loaded_bytes_);
    }
    bytes -= freed;
    loaded_.erase(oldest);
    ++unloaded;
  }
  return unloaded;
}

absl::StatusOr<cache::ModelRecord> ModelCatalog::ReadIntact(const std::string& id) {
  absl::StatusOr<cache::ModelRecord> record = store_->GetModel(id);
  std::string damage;
  if (record.ok()) {
    const std::string actual = model::ModelId(record->onnx, record->input_shapes);
    if (actual == id) return record;
    damage = absl::StrCat("its stored bytes hash to ", actual, ", not to its id");
  } else if (record.status().code() == absl::StatusCode::kDataLoss) {
    damage = std::string(record.status().message());
  } else {
    return record.status();
  }
  sync::MutexLock lock(&mu_);
  // The copy in memory was checked when loaded, but the one on disk is what a restart
  // serves: drop it, so the model answers the same before and after a restart.
  loaded_.erase(id);
  if (quarantined_.insert(id).second) {
    spdlog::error("model {} quarantined: {} (damaged on disk)", id, damage);
  }
  return absl::DataLossError(absl::StrCat("model ", id, " is quarantined: ", damage,
                                          " (damaged on disk); add the original file again to "
                                          "repair it, or remove the model"));
}

void ModelCatalog::Unquarantine(const std::string& id) {
  sync::MutexLock lock(&mu_);
  quarantined_.erase(id);
}

void ModelCatalog::Forget(const std::string& id) {
  sync::MutexLock lock(&mu_);
  loaded_.erase(id);
  quarantined_.erase(id);
}

void ModelCatalog::Clear() {
  sync::MutexLock lock(&mu_);
  loaded_.clear();
  quarantined_.clear();
}

int64_t ModelCatalog::LoadedCount() const {
  sync::MutexLock lock(&mu_);
  return static_cast<int64_t>(loaded_.size());
}

int64_t ModelCatalog::LoadedBytes() const {
  sync::MutexLock lock(&mu_);
  return LoadedBytesLocked();
}

int64_t ModelCatalog::LoadedBytesLocked() const {
  int64_t bytes = 0;
  for (const auto& [id, entry] : loaded_) bytes += backend_->ResidentBytes(*entry.model);
  return bytes;
}

}  // namespace psched::daemon
