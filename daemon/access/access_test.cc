#include "daemon/access/access.h"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>

#include "daemon/access/callers.h"
#include "gtest/gtest.h"

namespace psched::daemon {
namespace {

constexpr uid_t kDaemonUid = 4242;
constexpr gid_t kSocketGroup = 4300;
constexpr uid_t kStranger = 5000;

PeerCredentials Peer(uid_t uid, gid_t gid, std::vector<gid_t> groups = {}) {
  PeerCredentials peer;
  peer.uid = uid;
  peer.gid = gid;
  peer.pid = 77;
  peer.groups = std::move(groups);
  return peer;
}

AccessPolicy Policy(const AccessConfig& config = {},
                    std::optional<gid_t> socket_group = kSocketGroup) {
  absl::StatusOr<AccessPolicy> policy = AccessPolicy::Create(config, kDaemonUid, socket_group);
  EXPECT_TRUE(policy.ok()) << policy.status();
  return *policy;
}

// Debian's fixed ids of nobody / nogroup.
uid_t NobodyUid() { return getpwnam("nobody")->pw_uid; }
gid_t NogroupGid() { return getgrnam("nogroup")->gr_gid; }

TEST(AccessTest, OnlyRemovePurgeCalibrateVerifyAndImportNeedAdmin) {
  std::set<std::string> admin_only, changing;
  for (int i = 0; i <= static_cast<int>(Rpc::kImportPlans); ++i) {
    const Rpc rpc = static_cast<Rpc>(i);
    if (RequiredRole(rpc) == Role::kAdmin) admin_only.insert(RpcName(rpc));
    if (ChangesState(rpc)) changing.insert(RpcName(rpc));
    EXPECT_NE(RequiredRole(rpc), Role::kNone) << RpcName(rpc) << " must need a role";
  }
  EXPECT_EQ(admin_only, (std::set<std::string>{"RemoveModel", "PurgeCache", "Calibrate",
                                               "VerifyCache", "ImportPlans"}));
  EXPECT_EQ(changing, (std::set<std::string>{"RegisterModel", "RemoveModel", "PurgeCache",
                                             "Calibrate", "VerifyCache", "ImportPlans"}));
}

TEST(AccessTest, DefaultsRootAndTheDaemonsUserAreAdminsTheSocketGroupUsers) {
  AccessPolicy policy = Policy();
  EXPECT_EQ(policy.RoleOf(Peer(0, 0)), Role::kAdmin);
  EXPECT_EQ(policy.RoleOf(Peer(kDaemonUid, 1)), Role::kAdmin);
  EXPECT_EQ(policy.RoleOf(Peer(kStranger, kSocketGroup)), Role::kUser);
  EXPECT_EQ(policy.RoleOf(Peer(kStranger, 1, {2, kSocketGroup})), Role::kUser)
      << "supplementary membership counts";
  EXPECT_EQ(policy.RoleOf(Peer(kStranger, kStranger, {1, 2})), Role::kNone);
}

TEST(AccessTest, ConfigNamesAdminUsersAndGroupsByNameOrId) {
  AccessConfig config;
  config.admin_users = {"nobody", "6001"};
  config.admin_groups = {"4400"};
  AccessPolicy policy = Policy(config);
  EXPECT_EQ(policy.RoleOf(Peer(NobodyUid(), NogroupGid())), Role::kAdmin);
  EXPECT_EQ(policy.RoleOf(Peer(6001, 6001)), Role::kAdmin);
  EXPECT_EQ(policy.RoleOf(Peer(kStranger, kSocketGroup, {4400})), Role::kAdmin);
  EXPECT_EQ(policy.RoleOf(Peer(kStranger, kSocketGroup)), Role::kUser);
  // Naming admins adds to root and the daemon's user; it does not replace them.
  EXPECT_EQ(policy.RoleOf(Peer(0, 0)), Role::kAdmin);
  EXPECT_EQ(policy.RoleOf(Peer(kDaemonUid, kDaemonUid)), Role::kAdmin);
}

TEST(AccessTest, UserGroupsReplaceTheSocketGroup) {
  AccessConfig config;
  config.user_groups = {"nogroup"};
  AccessPolicy policy = Policy(config);
  EXPECT_EQ(policy.RoleOf(Peer(kStranger, NogroupGid())), Role::kUser);
  EXPECT_EQ(policy.RoleOf(Peer(kStranger, kSocketGroup)), Role::kNone);
}

TEST(AccessTest, UnknownSocketGroupLeavesTheSocketModeToDecide) {
  AccessPolicy policy = Policy({}, std::nullopt);
  EXPECT_EQ(policy.RoleOf(Peer(kStranger, kStranger)), Role::kUser);
  EXPECT_NE(policy.Summary().find("anyone who can open the socket"), std::string::npos);
}

TEST(AccessTest, UnknownNamesStopTheDaemonNamingThem) {
  AccessConfig users;
  users.admin_users = {"no-such-user-psched"};
  absl::StatusOr<AccessPolicy> policy = AccessPolicy::Create(users, kDaemonUid, kSocketGroup);
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(policy.status().message().find("no user named 'no-such-user-psched'"),
            std::string::npos)
      << policy.status();
  AccessConfig groups;
  groups.user_groups = {"no-such-group-psched"};
  policy = AccessPolicy::Create(groups, kDaemonUid, kSocketGroup);
  EXPECT_NE(policy.status().message().find("no group named 'no-such-group-psched'"),
            std::string::npos)
      << policy.status();
}

TEST(AccessTest, RefusalsNameTheRpcTheMissingRoleAndTheCaller) {
  AccessPolicy policy = Policy();
  const Caller user = policy.Identify(Peer(NobodyUid(), kSocketGroup));
  EXPECT_TRUE(policy.Permit(user, Rpc::kInfer).ok());
  EXPECT_TRUE(policy.Permit(user, Rpc::kRegisterModel).ok());
  absl::Status denied = policy.Permit(user, Rpc::kPurgeCache);
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(denied.message().find("PurgeCache needs the admin role"), std::string::npos) << denied;
  EXPECT_NE(denied.message().find("(nobody)"), std::string::npos) << denied;
  EXPECT_NE(denied.message().find("pid 77"), std::string::npos) << denied;
  EXPECT_NE(denied.message().find("has role user"), std::string::npos) << denied;

  const Caller stranger = policy.Identify(Peer(kStranger, kStranger));
  denied = policy.Permit(stranger, Rpc::kStatus);
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(denied.message().find("Status needs the user role"), std::string::npos) << denied;
  EXPECT_NE(denied.message().find("has role none"), std::string::npos) << denied;

  const Caller admin = policy.Identify(Peer(0, 0));
  for (int i = 0; i <= static_cast<int>(Rpc::kImportPlans); ++i) {
    EXPECT_TRUE(policy.Permit(admin, static_cast<Rpc>(i)).ok());
  }
}

TEST(AccessTest, CallersAreFoundByTheirConnectionsPeerString) {
  Callers callers(Policy());
  callers.Register(17, Peer(kStranger, kSocketGroup));
  EXPECT_EQ(callers.Lookup("fd:17").role, Role::kUser);
  EXPECT_EQ(callers.Lookup("fd:17").credentials.uid, kStranger);
  // A new connection that got fd 17 after the old one closed replaces it.
  callers.Register(17, Peer(0, 0));
  EXPECT_EQ(callers.Lookup("fd:17").role, Role::kAdmin);
  // Anything unknown has no role: refused, never mistaken for someone.
  for (const char* peer : {"fd:18", "unix:", "fd:", "fd:17x", ""}) {
    EXPECT_EQ(callers.Lookup(peer).role, Role::kNone) << peer;
  }
  EXPECT_NE(callers.Lookup("unix:").description.find("unidentified peer (unix:)"),
            std::string::npos);
}

TEST(AccessTest, ReadsTheKernelsCredentialsOfASocketPeer) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  absl::StatusOr<PeerCredentials> peer = ReadPeerCredentials(fds[0]);
  ASSERT_TRUE(peer.ok()) << peer.status();
  EXPECT_EQ(peer->uid, geteuid());
  EXPECT_EQ(peer->gid, getegid());
  EXPECT_EQ(peer->pid, getpid());
  std::vector<gid_t> groups(static_cast<size_t>(getgroups(0, nullptr)));
  groups.resize(static_cast<size_t>(getgroups(static_cast<int>(groups.size()), groups.data())));
  EXPECT_EQ(std::set<gid_t>(peer->groups.begin(), peer->groups.end()),
            std::set<gid_t>(groups.begin(), groups.end()));
  close(fds[0]);
  close(fds[1]);
  EXPECT_FALSE(ReadPeerCredentials(fds[0]).ok()) << "a closed fd has no peer";
}

}  // namespace
}  // namespace psched::daemon
