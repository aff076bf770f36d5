// PeerCredentials: who is at the other end of a connected unix socket, as the kernel recorded
// it when the peer called connect(2) (SO_PEERCRED: uid, gid, pid; SO_PEERGROUPS: the
// supplementary groups). The peer cannot forge or later change them, which is what makes
// them fit to decide access. Value type.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace psched::daemon {

struct PeerCredentials {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  // Supplementary groups of the peer process at connect time (may include gid).
  std::vector<gid_t> groups;

  // True when gid or a supplementary group is `group`.
  bool InGroup(gid_t group) const;
};

// The credentials of the peer of connected unix socket `fd`. INTERNAL with the errno text
// when the kernel does not give them (not a unix socket).
absl::StatusOr<PeerCredentials> ReadPeerCredentials(int fd);

// "alice" or "1000" when the id has no name (NSS lookups; used in log lines and messages).
std::string UserName(uid_t uid);
std::string GroupName(gid_t gid);

}  // namespace psched::daemon
