#include "cache/store.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cache/schema.h"
#include "cache/sqlite.h"
#include "gtest/gtest.h"

namespace psched::cache {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the test's temp dir, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "psched_cache_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, ec);
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string db() const { return (fs::path(path_) / Store::kFileName).string(); }

 private:
  std::string path_;
};

ModelRecord Model(const std::string& id, const std::string& name, size_t bytes = 100) {
  ModelRecord model;
  model.id = id;
  model.name = name;
  model.onnx = std::string(bytes, 'x');
  model.summary_json = R"({"ops": 3})";
  return model;
}

PlanKey Key(const std::string& model_id, const std::string& config = "heft") {
  return PlanKey{model_id, "host:cpu.0,cpu.1", "analytic-v1", config};
}

PlanRecord Plan(const PlanKey& key, double makespan_us) {
  PlanRecord plan;
  plan.key = key;
  plan.scheduler = "heft";
  plan.schedule_json = R"({"makespan_us": 1})";
  plan.makespan_us = makespan_us;
  plan.planning_ms = 2.5;
  return plan;
}

const std::string kIdA(64, 'a');
const std::string kIdB = std::string(63, 'b') + "c";

TEST(StoreTest, ModelsRoundTrip) {
  TempDir dir;
  auto store = Store::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE(*(*store)->PutModel(Model(kIdA, "alpha", 1234)));
  EXPECT_FALSE(*(*store)->PutModel(Model(kIdA, "alpha again")));
  ModelRecord beta = Model(kIdB, "beta");
  beta.input_shapes = R"({"x":[1,3,64,64]})";
  ASSERT_TRUE(*(*store)->PutModel(beta));

  auto model = (*store)->GetModel(kIdA);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->name, "alpha");
  EXPECT_EQ(model->onnx.size(), 1234u);
  EXPECT_EQ(model->size_bytes, 1234);
  EXPECT_EQ(model->summary_json, R"({"ops": 3})");
  EXPECT_EQ(model->input_shapes, "");
  EXPECT_EQ((*store)->GetModel(kIdB)->input_shapes, R"({"x":[1,3,64,64]})");

  auto models = (*store)->ListModels();
  ASSERT_TRUE(models.ok());
  ASSERT_EQ(models->size(), 2u);
  EXPECT_EQ((*models)[0].id, kIdA);
  EXPECT_TRUE((*models)[0].onnx.empty());
  EXPECT_EQ((*models)[1].id, kIdB);
  EXPECT_EQ((*models)[1].input_shapes, R"({"x":[1,3,64,64]})");

  EXPECT_EQ((*store)->GetModel(std::string(64, 'e')).status().code(), absl::StatusCode::kNotFound);
}

// Bytes that differ from chunk to chunk, so a reordered or repeated chunk shows.
std::string Pattern(size_t bytes) {
  std::string out(bytes, '\0');
  uint32_t state = 12345;
  for (char& c : out) {
    state = state * 1664525u + 1013904223u;
    c = static_cast<char>(state >> 24);
  }
  return out;
}

int64_t CountChunks(const std::string& db_path, const std::string& model_id = "") {
  auto db = Connection::Open(db_path);
  if (!db.ok()) return -1;
  auto count = db->QueryInt("SELECT count(*) FROM model_chunks WHERE '" + model_id +
                            "' = '' OR model_id = '" + model_id + "'");
  return count.ok() ? *count : -1;
}

void EditDatabase(const std::string& db_path, const std::string& sql) {
  auto db = Connection::Open(db_path);
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE(db->Exec(sql).ok()) << sql;
}

constexpr int64_t kMiB = 1 << 20;

TEST(StoreTest, ModelsLargerThanOneChunkRoundTrip) {
  TempDir dir;
  StoreOptions options;
  options.model_chunk_bytes = kMiB;
  ModelRecord model = Model(kIdA, "big");
  model.onnx = Pattern(3 * kMiB + kMiB / 2);
  {
    auto store = Store::Open(dir.path(), options);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE(*(*store)->PutModel(model));
    auto got = (*store)->GetModel(kIdA);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->size_bytes, 3 * kMiB + kMiB / 2);
    EXPECT_TRUE(got->onnx == model.onnx);
    EXPECT_EQ(got->onnx.capacity(), got->onnx.size()) << "assembled in one preallocated buffer";
    auto info = (*store)->GetModelInfo(kIdA);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_TRUE(info->onnx.empty());
    EXPECT_EQ(info->size_bytes, 3 * kMiB + kMiB / 2);
  }
  EXPECT_EQ(CountChunks(dir.db(), kIdA), 4);
  // Another chunk size reads what was stored, and stores new models in its own chunks.
  options.model_chunk_bytes = 3 * kMiB;
  auto store = *Store::Open(dir.path(), options);
  EXPECT_TRUE(store->GetModel(kIdA)->onnx == model.onnx);
  ModelRecord second = Model(kIdB, "b");
  second.onnx = Pattern(3 * kMiB + 1);
  ASSERT_TRUE(*store->PutModel(second));
  EXPECT_EQ(CountChunks(dir.db(), kIdB), 2);
  EXPECT_TRUE(store->GetModel(kIdB)->onnx == second.onnx);
}

TEST(StoreTest, ChunkSizeOutsideSqlitesLimitIsRefused) {
  TempDir dir;
  for (int64_t bytes : {int64_t{0}, int64_t{1} << 40}) {
    StoreOptions options;
    options.model_chunk_bytes = bytes;
    auto store = Store::Open(dir.path(), options);
    EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument) << bytes;
    EXPECT_NE(store.status().message().find("chunk size"), std::string::npos) << store.status();
  }
}

TEST(StoreTest, RemovingAModelRemovesItsChunks) {
  TempDir dir;
  StoreOptions options;
  options.model_chunk_bytes = 1000;
  auto store = *Store::Open(dir.path(), options);
  ASSERT_TRUE(store->PutModel(Model(kIdA, "a", 3500)).ok());
  ASSERT_TRUE(store->PutModel(Model(kIdB, "b", 2500)).ok());
  EXPECT_EQ(CountChunks(dir.db()), 7);
  ASSERT_TRUE(store->RemoveModel(kIdA).ok());
  EXPECT_EQ(CountChunks(dir.db(), kIdA), 0);
  EXPECT_EQ(CountChunks(dir.db(), kIdB), 3);
  EXPECT_EQ(store->GetModel(kIdB)->onnx.size(), 2500u);
  ASSERT_TRUE(store->Purge(false).ok());
  EXPECT_EQ(CountChunks(dir.db()), 3) << "a plan purge keeps the models";
  ASSERT_TRUE(store->Purge(true).ok());
  EXPECT_EQ(CountChunks(dir.db()), 0);
}

TEST(StoreTest, DamagedChunksAreDataLossNamingTheModel) {
  TempDir dir;
  StoreOptions options;
  options.model_chunk_bytes = 1000;
  const std::string original = Pattern(3500);
  auto store = *Store::Open(dir.path(), options);
  ModelRecord model = Model(kIdA, "a");
  model.onnx = original;
  ASSERT_TRUE(store->PutModel(model).ok());
  ASSERT_TRUE(store->PutModel(Model(kIdB, "b", 10)).ok());

  struct Damage {
    std::string sql;
    std::string reason;
  };
  const std::string model_a = " AND model_id = '" + kIdA + "'";
  const std::vector<Damage> damage = {
      {"DELETE FROM model_chunks WHERE seq = 1" + model_a,
       "chunk 1 of its stored bytes is missing"},
      {"DELETE FROM model_chunks WHERE seq = 3" + model_a, "hold 3000 bytes, not the 3500"},
      {"UPDATE model_chunks SET bytes = substr(bytes, 1, 10) WHERE seq = 0" + model_a,
       "hold 2510 bytes"},
      {"UPDATE model_chunks SET bytes = bytes || x'00' WHERE seq = 2" + model_a,
       "chunk 2 of its stored bytes is not a blob"},
      {"UPDATE model_chunks SET bytes = CAST(bytes || x'00' AS BLOB) WHERE seq = 2" + model_a,
       "hold 3501 bytes"},
      {"UPDATE models SET size_bytes = 1000000000000000 WHERE id = '" + kIdA + "'",
       "not the 1000000000000000"},
  };
  for (const Damage& d : damage) {
    EditDatabase(dir.db(), d.sql);
    auto got = store->GetModel(kIdA);
    ASSERT_FALSE(got.ok()) << d.sql;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << d.sql;
    EXPECT_NE(got.status().message().find(kIdA), std::string::npos) << got.status();
    EXPECT_NE(got.status().message().find(d.reason), std::string::npos) << got.status();
    // The other model and the listing are unaffected, and the original repairs it.
    EXPECT_EQ(store->GetModel(kIdB)->onnx.size(), 10u);
    EXPECT_EQ(store->ListModels()->size(), 2u);
    ASSERT_TRUE(store->RepairModelBytes(kIdA, original).ok());
    EXPECT_TRUE(store->GetModel(kIdA)->onnx == original) << d.sql;
    EXPECT_EQ(CountChunks(dir.db(), kIdA), 4);
  }
  EXPECT_EQ(store->RepairModelBytes(std::string(64, 'e'), original).code(),
            absl::StatusCode::kNotFound);
}

TEST(StoreTest, ResolvesPrefixes) {
  TempDir dir;
  auto store = *Store::Open(dir.path());
  ASSERT_TRUE(store->PutModel(Model(kIdA, "a")).ok());
  ASSERT_TRUE(store->PutModel(Model(std::string(8, 'a') + std::string(56, '1'), "a2")).ok());
  ASSERT_TRUE(store->PutModel(Model(kIdB, "b")).ok());
  EXPECT_EQ(*store->ResolveModelId("bbbbbbbbbb"), kIdB);
  EXPECT_EQ(*store->ResolveModelId(kIdA), kIdA);
  EXPECT_EQ(store->ResolveModelId("aaaaaaaa").status().code(),
            absl::StatusCode::kInvalidArgument);  // ambiguous
  EXPECT_EQ(store->ResolveModelId("bbb").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->ResolveModelId("not-hex!").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->ResolveModelId("dddddddd").status().code(), absl::StatusCode::kNotFound);
}

TEST(StoreTest, PlansHitAfterReopen) {
  TempDir dir;
  {
    auto store = *Store::Open(dir.path());
    ASSERT_TRUE(store->PutModel(Model(kIdA, "a")).ok());
    auto miss = store->LookupPlan(Key(kIdA));
    ASSERT_TRUE(miss.ok()) << miss.status();
    EXPECT_FALSE(miss->has_value());
    ASSERT_TRUE(store->PutPlan(Plan(Key(kIdA), 812.5)).ok());
  }
  auto store = *Store::Open(dir.path());
  auto hit = store->LookupPlan(Key(kIdA));
  ASSERT_TRUE(hit.ok()) << hit.status();
  ASSERT_TRUE(hit->has_value());
  EXPECT_DOUBLE_EQ((*hit)->makespan_us, 812.5);
  EXPECT_DOUBLE_EQ((*hit)->planning_ms, 2.5);
  EXPECT_EQ((*hit)->hits, 1);
  EXPECT_EQ((*hit)->schedule_json, R"({"makespan_us": 1})");

  // Each key component separates plans.
  PlanKey other = Key(kIdA);
  other.platform_fingerprint = "pixel4";
  EXPECT_FALSE(store->LookupPlan(other)->has_value());
  other = Key(kIdA);
  other.predictor_version = "gbdt-v2";
  EXPECT_FALSE(store->LookupPlan(other)->has_value());
  EXPECT_FALSE(store->LookupPlan(Key(kIdA, "iterative;seed=1"))->has_value());

  auto stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->models, 1);
  EXPECT_EQ(stats->plans, 1);
  EXPECT_EQ(stats->hits, 1);
  EXPECT_EQ(stats->misses, 4);
  EXPECT_GT(stats->db_bytes, 0);
  EXPECT_EQ(stats->path, dir.db());
}

TEST(StoreTest, PutPlanReplacesAndNeedsModel) {
  TempDir dir;
  auto store = *Store::Open(dir.path());
  absl::Status orphan = store->PutPlan(Plan(Key(kIdA), 1.0));
  EXPECT_EQ(orphan.code(), absl::StatusCode::kNotFound) << orphan;
  ASSERT_TRUE(store->PutModel(Model(kIdA, "a")).ok());
  ASSERT_TRUE(store->PutPlan(Plan(Key(kIdA), 10.0)).ok());
  ASSERT_TRUE(store->PutPlan(Plan(Key(kIdA), 7.0)).ok());
  auto plans = store->ListPlans();
  ASSERT_EQ(plans->size(), 1u);
  EXPECT_DOUBLE_EQ((*plans)[0].makespan_us, 7.0);
}

TEST(StoreTest, RemoveModelCascades) {
  TempDir dir;
  auto store = *Store::Open(dir.path());
  ASSERT_TRUE(store->PutModel(Model(kIdA, "a")).ok());
  ASSERT_TRUE(store->PutModel(Model(kIdB, "b")).ok());
  ASSERT_TRUE(store->PutPlan(Plan(Key(kIdA, "heft"), 1)).ok());
  ASSERT_TRUE(store->PutPlan(Plan(Key(kIdA, "peft"), 2)).ok());
  ASSERT_TRUE(store->PutPlan(Plan(Key(kIdB, "heft"), 3)).ok());
  ASSERT_TRUE(store->RecordInference(kIdA, 100).ok());
  EXPECT_EQ(*store->RemoveModel(kIdA), 2);
  EXPECT_EQ(store->ListPlans()->size(), 1u);
  EXPECT_EQ(store->ListPlans(kIdB)->size(), 1u);
  EXPECT_EQ(store->GetUsage(kIdA).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->RemoveModel(kIdA).status().code(), absl::StatusCode::kNotFound);
}

TEST(StoreTest, UsageAccumulates) {
  TempDir dir;
  auto store = *Store::Open(dir.path());
  ASSERT_TRUE(store->PutModel(Model(kIdA, "a")).ok());
  ASSERT_TRUE(store->RecordInference(kIdA, 100).ok());
  ASSERT_TRUE(store->RecordInference(kIdA, 50).ok());
  auto usage = store->GetUsage(kIdA);
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->inferences, 2);
  EXPECT_DOUBLE_EQ(usage->total_latency_us, 150);
  EXPECT_EQ(store->RecordInference(kIdB, 1).code(), absl::StatusCode::kNotFound);
}

TEST(StoreTest, RecordUsageAddsABatchAndSkipsWhatWasRemoved) {
  TempDir dir;
  auto store = *Store::Open(dir.path());
  ASSERT_TRUE(store->PutModel(Model(kIdA, "a")).ok());
  ASSERT_TRUE(store->PutPlan(Plan(Key(kIdA, "heft"), 1)).ok());
  ASSERT_TRUE(store->PutPlan(Plan(Key(kIdA, "peft"), 1)).ok());
  ASSERT_TRUE(store->RecordInference(kIdA, 10).ok());
  UsageBatch batch;
  batch.plan_hits = {{Key(kIdA, "heft"), 3}, {Key(kIdA, "peft"), 2}, {Key(kIdB, "heft"), 7}};
  batch.models = {{kIdA, 4, 100.0, 1234567}, {kIdB, 9, 1.0, 1}};
  ASSERT_TRUE(store->RecordUsage(batch).ok());
  auto plans = *store->ListPlans(kIdA);
  ASSERT_EQ(plans.size(), 2u);
  for (const PlanRecord& plan : plans) {
    EXPECT_EQ(plan.hits, plan.key.scheduler_config == "heft" ? 3 : 2);
  }
  // The counter counts what was added, including hits of a plan removed meanwhile.
  EXPECT_EQ(store->Stats()->hits, 12);
  auto usage = store->GetUsage(kIdA);
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->inferences, 5);
  EXPECT_DOUBLE_EQ(usage->total_latency_us, 110);
  EXPECT_EQ(store->GetUsage(kIdB).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store->RecordUsage(UsageBatch{}).ok());
}

TEST(StoreTest, PurgeKeepsOrDropsModels) {
  TempDir dir;
  auto store = *Store::Open(dir.path());
  ASSERT_TRUE(store->PutModel(Model(kIdA, "a")).ok());
  ASSERT_TRUE(store->PutPlan(Plan(Key(kIdA, "heft"), 1)).ok());
  ASSERT_TRUE(store->PutPlan(Plan(Key(kIdA, "peft"), 1)).ok());
  auto purged = store->Purge(false);
  ASSERT_TRUE(purged.ok()) << purged.status();
  EXPECT_EQ(purged->plans_removed, 2);
  EXPECT_EQ(purged->models_removed, 0);
  EXPECT_EQ(store->Stats()->models, 1);
  purged = store->Purge(true);
  EXPECT_EQ(purged->models_removed, 1);
  EXPECT_EQ(store->Stats()->models, 0);
}

TEST(StoreTest, UsesWalMode) {
  TempDir dir;
  auto store = *Store::Open(dir.path());
  ASSERT_TRUE(store->PutModel(Model(kIdA, "a")).ok());
  EXPECT_TRUE(fs::exists(dir.db() + "-wal"));
}

TEST(StoreTest, CorruptFileIsRefusedClearly) {
  TempDir dir;
  {
    std::ofstream out(dir.db(), std::ios::binary);
    out << std::string(8192, '\x5a');
  }
  auto store = Store::Open(dir.path());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(store.status().message().find(dir.db()), std::string::npos) << store.status();
  EXPECT_NE(store.status().message().find("corrupt"), std::string::npos) << store.status();
}

TEST(StoreTest, DamagedPageFailsIntegrityCheck) {
  TempDir dir;
  {
    auto store = *Store::Open(dir.path());
    for (int i = 0; i < 20; ++i) {
      std::string id(64, '0');
      id[63] = "0123456789abcdef"[i % 16];
      id[62] = "0123456789abcdef"[i / 16];
      ASSERT_TRUE(store->PutModel(Model(id, "m", 3000)).ok());
    }
  }
  // Checkpoint the WAL into the main file, then overwrite a b-tree page in the middle.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.db().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  {
    std::fstream file(dir.db(), std::ios::binary | std::ios::in | std::ios::out);
    file.seekp(4096 + 16);
    std::string junk(2000, '\x7f');
    file.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto store = Store::Open(dir.path());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
}

TEST(StoreTest, MigratesFromVersionOne) {
  TempDir dir;
  // A database exactly as schema version 1 wrote it.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.db().c_str(), &db), SQLITE_OK);
  std::string v1 = R"sql(
CREATE TABLE models (id TEXT PRIMARY KEY, name TEXT NOT NULL, onnx BLOB NOT NULL,
  size_bytes INTEGER NOT NULL, summary_json TEXT NOT NULL, created_unix_s INTEGER NOT NULL);
CREATE TABLE plans (
  model_id TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
  platform_fingerprint TEXT NOT NULL, predictor_version TEXT NOT NULL,
  scheduler_config TEXT NOT NULL, scheduler TEXT NOT NULL, schedule_json TEXT NOT NULL,
  makespan_us REAL NOT NULL, planning_ms REAL NOT NULL, created_unix_s INTEGER NOT NULL,
  PRIMARY KEY (model_id, platform_fingerprint, predictor_version, scheduler_config));
INSERT INTO models VALUES ()sql" +
                   std::string("'") + kIdA + R"sql(', 'old', x'0102', 2, '{}', 1700000000);
INSERT INTO plans VALUES (')sql" +
                   kIdA +
                   R"sql(', 'host:cpu.0,cpu.1', 'analytic-v1', 'heft', 'heft', '{}', 42.0, 1.5,
  1700000001);
PRAGMA user_version = 1;
)sql";
  ASSERT_EQ(sqlite3_exec(db, v1.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = Store::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status();
  auto model = (*store)->GetModel(kIdA);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->name, "old");
  EXPECT_EQ(model->onnx, std::string("\x01\x02", 2));
  EXPECT_FALSE(model->synthesize_weights);
  EXPECT_EQ(model->input_shapes, "");
  auto plan = (*store)->LookupPlan(Key(kIdA));
  ASSERT_TRUE(plan.ok() && plan->has_value());
  EXPECT_DOUBLE_EQ((*plan)->makespan_us, 42.0);
  EXPECT_EQ((*plan)->hits, 1);
  ASSERT_TRUE((*store)->RecordInference(kIdA, 5).ok());

  (*store).reset();
  ASSERT_EQ(sqlite3_open(dir.db().c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nullptr);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), kSchemaVersion);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

// A database exactly as schema version 4 wrote it, with a model's bytes in one blob.
TEST(StoreTest, MigratesSingleBlobModelsFromVersionFour) {
  TempDir dir;
  const std::string old_bytes = Pattern(5000);
  {
    auto db = Connection::Open(dir.db());
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE(db->Exec(R"sql(
CREATE TABLE models (id TEXT PRIMARY KEY, name TEXT NOT NULL, onnx BLOB NOT NULL,
  size_bytes INTEGER NOT NULL, summary_json TEXT NOT NULL, created_unix_s INTEGER NOT NULL,
  synthesize_weights INTEGER NOT NULL DEFAULT 0, input_shapes TEXT NOT NULL DEFAULT '');
CREATE TABLE plans (
  model_id TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
  platform_fingerprint TEXT NOT NULL, predictor_version TEXT NOT NULL,
  scheduler_config TEXT NOT NULL, scheduler TEXT NOT NULL, schedule_json TEXT NOT NULL,
  makespan_us REAL NOT NULL, planning_ms REAL NOT NULL, created_unix_s INTEGER NOT NULL,
  hits INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (model_id, platform_fingerprint, predictor_version, scheduler_config));
CREATE TABLE usage (model_id TEXT PRIMARY KEY REFERENCES models(id) ON DELETE CASCADE,
  inferences INTEGER NOT NULL DEFAULT 0, total_latency_us REAL NOT NULL DEFAULT 0,
  last_unix_s INTEGER NOT NULL DEFAULT 0);
CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT INTO counters(name, value) VALUES ('plan_hits', 3), ('plan_misses', 4);
CREATE TABLE calibrations (platform_key TEXT PRIMARY KEY, predictor_version TEXT NOT NULL,
  params_json TEXT NOT NULL, report_json TEXT NOT NULL, created_unix_s INTEGER NOT NULL);
PRAGMA user_version = 4;
)sql")
                    .ok());
    auto insert = db->Prepare(
        "INSERT INTO models VALUES (?, 'old', ?, ?, '{}', 1700000000, 1, '{\"x\":[1,4]}')");
    ASSERT_TRUE(insert.ok()) << insert.status();
    insert->Bind(1, kIdA).BindBlob(2, old_bytes).Bind(3, static_cast<int64_t>(old_bytes.size()));
    ASSERT_TRUE(insert->Run().ok());
    insert->Reset();
    insert->Bind(1, kIdB).BindBlob(2, "ab").Bind(3, int64_t{2});
    ASSERT_TRUE(insert->Run().ok());
    ASSERT_TRUE(db->Exec("INSERT INTO plans VALUES ('" + kIdA +
                         "', 'host:cpu.0,cpu.1', 'analytic-v1', 'heft', 'heft', '{}', 42.0, 1.5, "
                         "1700000001, 2)")
                    .ok());
  }

  StoreOptions options;
  options.model_chunk_bytes = 1000;
  auto store = Store::Open(dir.path(), options);
  ASSERT_TRUE(store.ok()) << store.status();
  auto model = (*store)->GetModel(kIdA);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->name, "old");
  EXPECT_TRUE(model->onnx == old_bytes);
  EXPECT_EQ(model->size_bytes, 5000);
  EXPECT_TRUE(model->synthesize_weights);
  EXPECT_EQ(model->input_shapes, R"({"x":[1,4]})");
  EXPECT_EQ((*store)->GetModel(kIdB)->onnx, "ab");
  auto plan = (*store)->LookupPlan(Key(kIdA));
  ASSERT_TRUE(plan.ok() && plan->has_value());
  EXPECT_EQ((*plan)->hits, 3);
  EXPECT_FALSE((*plan)->imported) << "plans before version 6 were all planned here";
  EXPECT_EQ((*store)->Stats()->hits, 4);
  // A migrated model is one chunk until it is stored again; removal takes its chunk.
  EXPECT_EQ(CountChunks(dir.db(), kIdA), 1);
  ASSERT_TRUE((*store)->RemoveModel(kIdB).ok());
  EXPECT_EQ(CountChunks(dir.db()), 1);
  (*store).reset();

  auto db = Connection::Open(dir.db());
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(*db->QueryInt("PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM pragma_table_info('models') WHERE name = 'onnx'"),
            0)
      << "the single-blob column is gone";
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM models WHERE owner = ''"), 1)
      << "models stored before owners were recorded are nobody's";
}

// Each owner's models count against their own quota, inside the write transaction; a model
// over it is not written and nothing of anyone else's is removed; a model already stored
// passes; models without an owner count for nobody.
TEST(StoreTest, QuotasCountEachOwnersModelsOnly) {
  TempDir dir;
  auto store = Store::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status();
  const ModelQuota quota{.max_models = 2, .max_bytes = 250};
  auto owned = [](const std::string& id, const std::string& owner, size_t bytes) {
    ModelRecord model = Model(id, owner + "'s", bytes);
    model.owner = owner;
    return model;
  };
  const std::string a1(64, '1'), a2(64, '2'), a3(64, '3'), b1(64, '4'), c1(64, '5');
  ASSERT_TRUE((*store)->PutModel(owned(c1, "", 10000)).ok());
  auto first = (*store)->PutModelWithin(owned(a1, "1000", 100), &quota);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->inserted);
  EXPECT_EQ(first->usage.models, 0);
  ASSERT_TRUE((*store)->PutModelWithin(owned(b1, "1001", 200), &quota)->inserted);
  // 100 + 200 bytes is over 250: refused, with the usage it met.
  auto too_big = (*store)->PutModelWithin(owned(a2, "1000", 200), &quota);
  ASSERT_TRUE(too_big.ok()) << too_big.status();
  EXPECT_FALSE(too_big->inserted);
  EXPECT_TRUE(too_big->over_quota);
  EXPECT_EQ(too_big->usage.models, 1);
  EXPECT_EQ(too_big->usage.bytes, 100);
  EXPECT_EQ((*store)->GetModelInfo(a2).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE((*store)->PutModelWithin(owned(a2, "1000", 100), &quota)->inserted);
  // Two models: a third is over the count, however small.
  auto third = (*store)->PutModelWithin(owned(a3, "1000", 1), &quota);
  EXPECT_TRUE(third->over_quota);
  EXPECT_EQ(third->usage.models, 2);
  // Stored already (by anyone): passes, writes nothing.
  auto again = (*store)->PutModelWithin(owned(b1, "1000", 200), &quota);
  EXPECT_FALSE(again->over_quota);
  EXPECT_FALSE(again->inserted);
  EXPECT_EQ((*store)->GetModelInfo(b1)->owner, "1001");
  EXPECT_EQ((*store)->UsageOf("1000")->models, 2);
  EXPECT_EQ((*store)->UsageOf("1000")->bytes, 200);
  EXPECT_EQ((*store)->UsageOf("1001")->bytes, 200);
  EXPECT_EQ((*store)->UsageOf("")->bytes, 10000);
  EXPECT_EQ((*store)->ListModels()->size(), 4u);
  ASSERT_TRUE((*store)->RemoveModel(a1).ok());
  EXPECT_TRUE((*store)->PutModelWithin(owned(a3, "1000", 1), &quota)->inserted);
}

TEST(StoreTest, ImportedFlagIsStoredAndClearedWhenThePlanIsReplaced) {
  TempDir dir;
  auto store = Store::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->PutModel(Model(kIdA, "a")).ok());
  PlanRecord plan = Plan(Key(kIdA), 10);
  plan.imported = true;
  ASSERT_TRUE((*store)->PutPlan(plan).ok());
  EXPECT_TRUE((*(*store)->LookupPlan(plan.key))->imported);
  EXPECT_TRUE((*store)->ListPlans(kIdA)->at(0).imported);
  plan.imported = false;  // replanned here under the same key
  ASSERT_TRUE((*store)->PutPlan(plan).ok());
  EXPECT_FALSE((*(*store)->LookupPlan(plan.key))->imported);
}

TEST(StoreTest, CalibrationsAreKeptPerPlatformAndReplaced) {
  TempDir dir;
  {
    auto store = Store::Open(dir.path());
    ASSERT_TRUE(store.ok()) << store.status();
    auto none = (*store)->LookupCalibration("host;cpu.0:0");
    ASSERT_TRUE(none.ok()) << none.status();
    EXPECT_FALSE(none->has_value());
    ASSERT_TRUE(
        (*store)
            ->PutCalibration({"host;cpu.0:0", "analytic-v1/a", "{\"p\":1}", "{}", 1700000000})
            .ok());
    ASSERT_TRUE((*store)->PutCalibration({"host;cpu.1:1", "analytic-v1/b", "{}", "{}", 0}).ok());
    ASSERT_TRUE(
        (*store)->PutCalibration({"host;cpu.0:0", "analytic-v1/c", "{\"p\":2}", "{}", 0}).ok());
  }
  // Survives reopening; the second put for cpu.0 replaced the first.
  auto store = Store::Open(dir.path());
  ASSERT_TRUE(store.ok()) << store.status();
  auto got = (*store)->LookupCalibration("host;cpu.0:0");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->predictor_version, "analytic-v1/c");
  EXPECT_EQ((*got)->params_json, "{\"p\":2}");
  EXPECT_GT((*got)->created_unix_s, 1700000000);
  auto other = (*store)->LookupCalibration("host;cpu.1:1");
  ASSERT_TRUE(other.ok() && other->has_value());
  EXPECT_EQ((*other)->predictor_version, "analytic-v1/b");
}

TEST(StoreTest, RefusesNewerSchema) {
  TempDir dir;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.db().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto store = Store::Open(dir.path());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("99"), std::string::npos) << store.status();
}

TEST(StoreTest, FullDatabaseIsResourceExhausted) {
  TempDir dir;
  StoreOptions options;
  options.max_db_bytes = 64 * 1024;
  options.model_chunk_bytes = 16 * 1024;
  auto store = Store::Open(dir.path(), options);
  ASSERT_TRUE(store.ok()) << store.status();
  auto put = (*store)->PutModel(Model(kIdA, "big", 256 * 1024));
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.status().code(), absl::StatusCode::kResourceExhausted) << put.status();
  EXPECT_NE(put.status().message().find("disk full"), std::string::npos) << put.status();
  // The chunks written before the database filled up were rolled back with the model's row.
  EXPECT_EQ((*store)->GetModelInfo(kIdA).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(CountChunks(dir.db()), 0);
  // The store stays usable for what fits.
  EXPECT_TRUE((*store)->PutModel(Model(kIdB, "small", 100)).ok());
}

TEST(StoreTest, MissingOrReadOnlyDirIsFailedPrecondition) {
  TempDir dir;
  auto missing = Store::Open(dir.path() + "/absent");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(missing.status().message().find("absent"), std::string::npos);
  if (geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  fs::permissions(dir.path(), fs::perms::owner_read | fs::perms::owner_exec);
  auto read_only = Store::Open(dir.path());
  EXPECT_EQ(read_only.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(read_only.status().message().find("not writable"), std::string::npos);
}

TEST(StoreTest, MissingTableFailsAtOpen) {
  TempDir dir;
  { ASSERT_TRUE(Store::Open(dir.path()).ok()); }
  {
    auto db = Connection::Open((std::filesystem::path(dir.path()) / Store::kFileName).string());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("DROP TABLE usage").ok());
  }
  auto reopened = Store::Open(dir.path());
  EXPECT_EQ(reopened.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(reopened.status().message().find("table 'usage' is missing"), std::string::npos)
      << reopened.status();
}

// Root writes read-only files, so the check runs in a child that drops to nobody.
TEST(StoreTest, ReadOnlyDatabaseFailsAtOpen) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become another user";
  TempDir dir;
  const std::string file = (std::filesystem::path(dir.path()) / Store::kFileName).string();
  { ASSERT_TRUE(Store::Open(dir.path()).ok()); }
  constexpr uid_t kNobody = 65534;
  ASSERT_EQ(chown(dir.path().c_str(), kNobody, kNobody), 0);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    ASSERT_EQ(chown(entry.path().c_str(), kNobody, kNobody), 0);
  }
  ASSERT_EQ(chmod(file.c_str(), 0444), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(10);
    auto store = Store::Open(dir.path());
    if (store.ok()) _exit(11);
    if (store.status().code() != absl::StatusCode::kFailedPrecondition) _exit(12);
    if (store.status().message().find(file) == std::string::npos) _exit(13);
    _exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << "10: could not drop to nobody, 11: opened, 12: wrong "
                                        "code, 13: message does not name the file";
}

}  // namespace
}  // namespace psched::cache
