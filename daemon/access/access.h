// Access control of pschedd's RPCs (docs/security.md): the role a connection's credentials
// give (AccessPolicy, built from the config's [access] table), the role each RPC needs,
// which RPCs change state, and the log line every state-changing or refused call leaves.
//
//   admin: root, the daemon's own user, [access] admin_users and members of admin_groups.
//          Everything, including RemoveModel, PurgeCache, Calibrate and VerifyCache.
//   user:  members of [access] user_groups (default: the socket file's group). Register
//          models, plan, infer and read (status, listings, cache figures).
//   none:  anyone else who reaches the socket (only if its mode is looser than configured):
//          every RPC is refused.
//
// AccessPolicy is immutable after Create and safe to share between threads.
#pragma once

#include <sys/types.h>

#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "daemon/access/peer_credentials.h"
#include "daemon/engine/config.h"

namespace psched::daemon {

enum class Role { kNone, kUser, kAdmin };
const char* RoleName(Role role);

// Every RPC of psched.v1.
enum class Rpc {
  kRegisterModel,
  kListModels,
  kGetModel,
  kRemoveModel,
  kGetPlan,
  kInfer,
  kStatus,
  kDevices,
  kCacheStats,
  kListCachedPlans,
  kPurgeCache,
  kCalibrate,
  kVerifyCache,
  kExportPlans,
  kImportPlans,
};
const char* RpcName(Rpc rpc);
Role RequiredRole(Rpc rpc);
// Whether the RPC changes what the daemon stores or how it plans (logged with the caller).
bool ChangesState(Rpc rpc);

// The caller of every RPC on one connection, fixed when the connection is accepted.
struct Caller {
  PeerCredentials credentials;
  Role role = Role::kNone;
  // "uid 1000 (alice) gid 1000 (alice) pid 4242": for log lines and refusals.
  std::string description;
  // "uid 1000 (alice)": the user alone, as quotas name them.
  std::string user;
};

class AccessPolicy {
 public:
  // `daemon_uid` is the daemon's effective uid; `socket_group` the group owning the socket
  // file (nullopt when unknown: then anyone who can open the socket is a user unless
  // user_groups are configured). INVALID_ARGUMENT naming an unknown user or group.
  static absl::StatusOr<AccessPolicy> Create(const AccessConfig& config, uid_t daemon_uid,
                                             std::optional<gid_t> socket_group);

  Role RoleOf(const PeerCredentials& peer) const;
  Caller Identify(const PeerCredentials& peer) const;
  // OK when the caller's role suffices; PERMISSION_DENIED naming the RPC, the role it needs,
  // the caller and how to grant the role otherwise.
  absl::Status Permit(const Caller& caller, Rpc rpc) const;
  // One line for the start-up log: who is admin, who is user.
  std::string Summary() const;

 private:
  AccessPolicy() = default;

  std::set<uid_t> admin_uids_;
  std::set<gid_t> admin_gids_;
  std::set<gid_t> user_gids_;
  // No user group is known: the socket's permissions alone decide who is a user.
  bool anyone_is_user_ = false;
};

// Logs "call: <RPC> [detail] by <caller description> role R: <outcome>", at info when the
// call succeeded and at warning otherwise (refusals included).
void LogCall(const Caller& caller, Rpc rpc, absl::string_view detail, const absl::Status& outcome);

}  // namespace psched::daemon
