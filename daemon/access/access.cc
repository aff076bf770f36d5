#include "daemon/access/access.h"

#include <grp.h>
#include <pwd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"

namespace psched::daemon {
namespace {

struct RpcRule {
  const char* name;
  Role needs;
  bool changes_state;
};

// The one table of who may call what. Reading is open to users; what removes data, changes
// how everyone's plans are made, or costs the whole machine (calibration, hashing every
// model) is for admins. RegisterModel changes state too but is what users are for.
RpcRule Rule(Rpc rpc) {
  switch (rpc) {
    case Rpc::kRegisterModel:
      return {"RegisterModel", Role::kUser, true};
    case Rpc::kListModels:
      return {"ListModels", Role::kUser, false};
    case Rpc::kGetModel:
      return {"GetModel", Role::kUser, false};
    case Rpc::kRemoveModel:
      return {"RemoveModel", Role::kAdmin, true};
    case Rpc::kGetPlan:
      return {"GetPlan", Role::kUser, false};
    case Rpc::kInfer:
      return {"Infer", Role::kUser, false};
    case Rpc::kStatus:
      return {"Status", Role::kUser, false};
    case Rpc::kDevices:
      return {"Devices", Role::kUser, false};
    case Rpc::kCacheStats:
      return {"CacheStats", Role::kUser, false};
    case Rpc::kListCachedPlans:
      return {"ListCachedPlans", Role::kUser, false};
    case Rpc::kPurgeCache:
      return {"PurgeCache", Role::kAdmin, true};
    case Rpc::kCalibrate:
      return {"Calibrate", Role::kAdmin, true};
    case Rpc::kVerifyCache:
      return {"VerifyCache", Role::kAdmin, true};
    case Rpc::kExportPlans:
      return {"ExportPlans", Role::kUser, false};
    // Writes the plan cache every caller is served from, as PurgeCache removes from it.
    case Rpc::kImportPlans:
      return {"ImportPlans", Role::kAdmin, true};
  }
  return {"unknown", Role::kAdmin, true};
}

// A configured name or decimal id.
template <typename Id>
absl::StatusOr<Id> Resolve(const std::string& entry, bool is_user) {
  uint32_t numeric = 0;
  if (absl::SimpleAtoi(entry, &numeric)) return static_cast<Id>(numeric);
  char buffer[16384];
  if (is_user) {
    passwd record{};
    passwd* found = nullptr;
    if (getpwnam_r(entry.c_str(), &record, buffer, sizeof(buffer), &found) == 0 &&
        found != nullptr) {
      return static_cast<Id>(found->pw_uid);
    }
  } else {
    group record{};
    group* found = nullptr;
    if (getgrnam_r(entry.c_str(), &record, buffer, sizeof(buffer), &found) == 0 &&
        found != nullptr) {
      return static_cast<Id>(found->gr_gid);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("[access]: no ", is_user ? "user" : "group",
                                                 " named '", entry, "' on this system"));
}

template <typename Id>
absl::Status ResolveAll(const std::vector<std::string>& entries, bool is_user, std::set<Id>& out) {
  for (const std::string& entry : entries) {
    absl::StatusOr<Id> id = Resolve<Id>(entry, is_user);
    if (!id.ok()) return id.status();
    out.insert(*id);
  }
  return absl::OkStatus();
}

std::string Names(const std::set<gid_t>& groups) {
  return absl::StrJoin(groups, ", ",
                       [](std::string* out, gid_t gid) { out->append(GroupName(gid)); });
}

}  // namespace

const char* RoleName(Role role) {
  switch (role) {
    case Role::kNone:
      return "none";
    case Role::kUser:
      return "user";
    case Role::kAdmin:
      return "admin";
  }
  return "none";
}

const char* RpcName(Rpc rpc) { return Rule(rpc).name; }
Role RequiredRole(Rpc rpc) { return Rule(rpc).needs; }
bool ChangesState(Rpc rpc) { return Rule(rpc).changes_state; }

absl::StatusOr<AccessPolicy> AccessPolicy::Create(const AccessConfig& config, uid_t daemon_uid,
                                                  std::optional<gid_t> socket_group) {
  AccessPolicy policy;
  // root and the daemon's own user own the database file: refusing them protects nothing.
  policy.admin_uids_ = {0, daemon_uid};
  if (absl::Status s = ResolveAll(config.admin_users, true, policy.admin_uids_); !s.ok()) return s;
  if (absl::Status s = ResolveAll(config.admin_groups, false, policy.admin_gids_); !s.ok()) {
    return s;
  }
  if (absl::Status s = ResolveAll(config.user_groups, false, policy.user_gids_); !s.ok()) return s;
  if (policy.user_gids_.empty()) {
    if (socket_group.has_value()) {
      policy.user_gids_.insert(*socket_group);
    } else {
      policy.anyone_is_user_ = true;
    }
  }
  return policy;
}

Role AccessPolicy::RoleOf(const PeerCredentials& peer) const {
  if (admin_uids_.contains(peer.uid)) return Role::kAdmin;
  for (gid_t group : admin_gids_) {
    if (peer.InGroup(group)) return Role::kAdmin;
  }
  if (anyone_is_user_) return Role::kUser;
  for (gid_t group : user_gids_) {
    if (peer.InGroup(group)) return Role::kUser;
  }
  return Role::kNone;
}

Caller AccessPolicy::Identify(const PeerCredentials& peer) const {
  std::string user = absl::StrCat("uid ", peer.uid, " (", UserName(peer.uid), ")");
  std::string description =
      absl::StrCat(user, " gid ", peer.gid, " (", GroupName(peer.gid), ") pid ", peer.pid);
  return Caller{peer, RoleOf(peer), std::move(description), std::move(user)};
}

absl::Status AccessPolicy::Permit(const Caller& caller, Rpc rpc) const {
  const Role needs = RequiredRole(rpc);
  if (caller.role >= needs) return absl::OkStatus();
  std::string grant =
      needs == Role::kAdmin
          ? "admins are root, the daemon's own user, and the users and groups in [access] "
            "admin_users / admin_groups of pschedd's config"
          : absl::StrCat("users are members of ",
                         user_gids_.empty() ? "the groups in [access] user_groups"
                                            : absl::StrCat("group ", Names(user_gids_)),
                         " (see [access] user_groups in pschedd's config)");
  return absl::PermissionDeniedError(absl::StrCat(RpcName(rpc), " needs the ", RoleName(needs),
                                                  " role; ", caller.description, " has role ",
                                                  RoleName(caller.role), " (", grant, ")"));
}

std::string AccessPolicy::Summary() const {
  std::string admins = absl::StrCat(
      "admins: ", absl::StrJoin(admin_uids_, ", ",
                                [](std::string* out, uid_t uid) { out->append(UserName(uid)); }));
  if (!admin_gids_.empty()) absl::StrAppend(&admins, " and groups ", Names(admin_gids_));
  std::string users = anyone_is_user_ ? "anyone who can open the socket"
                                      : absl::StrCat("members of ", Names(user_gids_));
  return absl::StrCat(admins, "; users: ", users);
}

void LogCall(const Caller& caller, Rpc rpc, absl::string_view detail, const absl::Status& outcome) {
  std::string line = RpcName(rpc);
  if (!detail.empty()) absl::StrAppend(&line, " ", detail);
  absl::StrAppend(&line, " by ", caller.description, " role ", RoleName(caller.role), ": ",
                  outcome.ok() ? "OK"
                               : absl::StrCat(absl::StatusCodeToString(outcome.code()), " ",
                                              outcome.message()));
  if (outcome.ok()) {
    spdlog::info("call: {}", line);
  } else {
    spdlog::warn("call: {}", line);
  }
}

}  // namespace psched::daemon
