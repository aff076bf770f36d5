// daemon::ModelCatalog: the registered models as the Engine serves them. It resolves an id or a
// unique prefix, reads a stored model back only while its bytes still hash to its id, and
// keeps the imported models (Backend::Load) loaded with the plans they compiled, unloading the
// least recently used beyond max_loaded_models or max_loaded_bytes (Backend::ResidentBytes).
// A stored model whose bytes no longer match its id is quarantined: never served, logged
// once, until the original is added again (Unquarantine) or the model is removed (Forget).
//
// Ownership: the store and the backend belong to the Engine and outlive the catalog. A loaded
// model is shared: unloading drops the catalog's reference, and the model is freed once the
// requests still using it are done.
//
// Thread-safety: all methods are thread-safe. One mutex guards the loaded models, their use
// clock and the quarantine; it is never held while importing a model or reading the store,
// and nothing else is called under it but Backend::ResidentBytes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "cache/store.h"
#include "daemon/engine/backend.h"
#include "sync/mutex.h"

namespace psched::daemon {

class ModelCatalog {
 public:
  // `max_loaded_bytes` 0: not bounded. REQUIRES: `store` and `backend` outlive the catalog.
  ModelCatalog(cache::Store* store, Backend* backend, int max_loaded_models,
               int64_t max_loaded_bytes);
  ModelCatalog(const ModelCatalog&) = delete;
  ModelCatalog& operator=(const ModelCatalog&) = delete;

  // The full id of a model: a loaded model's full id without a store lookup (the hot path
  // stays out of SQLite), anything else through the store.
  absl::StatusOr<std::string> Resolve(const std::string& id_or_prefix);
  // The imported model for a full id, importing it from the stored bytes on first use.
  absl::StatusOr<std::shared_ptr<const LoadedModel>> Loaded(const std::string& id);
  // Keeps `model` loaded as `id`, unloading the least recently used beyond the bounds; returns
  // the handle every caller shares (the first one kept when two threads loaded it at once).
  std::shared_ptr<const LoadedModel> Keep(const std::string& id,
                                          std::shared_ptr<const LoadedModel> model);
  // Unloads the least recently used models but `keep` while more than max_loaded_models are
  // loaded or they hold more than max_loaded_bytes; returns how many. `keep` alone may exceed
  // the bytes: the request using it is served.
  int UnloadBeyondBounds(const std::string& keep);
  // The stored model with its bytes when they are complete and, with its input shapes, hash
  // to its id; otherwise unloads and quarantines the model (logged once) and returns
  // DATA_LOSS naming it.
  absl::StatusOr<cache::ModelRecord> ReadIntact(const std::string& id);

  // The stored bytes of `id` were repaired: it may be served again.
  void Unquarantine(const std::string& id);
  // `id` was removed from the store: unloads it and drops its quarantine.
  void Forget(const std::string& id);
  // Every model was removed from the store.
  void Clear();

  int64_t LoadedCount() const;
  // What the loaded models and their compiled plans hold (Backend::ResidentBytes).
  int64_t LoadedBytes() const;

 private:
  struct LoadedEntry {
    std::shared_ptr<const LoadedModel> model;
    uint64_t last_used = 0;
  };

  std::shared_ptr<const LoadedModel> KeepLocked(const std::string& id,
                                                std::shared_ptr<const LoadedModel> model)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int UnloadBeyondBoundsLocked(const std::string& keep) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t LoadedBytesLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  cache::Store* const store_;
  Backend* const backend_;
  const int max_loaded_models_;
  const int64_t max_loaded_bytes_;

  mutable sync::Mutex mu_;
  // Imported models with their compiled plans, within the bounds (UnloadBeyondBounds).
  std::map<std::string, LoadedEntry> loaded_ ABSL_GUARDED_BY(mu_);
  uint64_t use_clock_ ABSL_GUARDED_BY(mu_) = 0;
  // Models whose stored bytes no longer hash to their id.
  std::set<std::string> quarantined_ ABSL_GUARDED_BY(mu_);
};

}  // namespace psched::daemon
