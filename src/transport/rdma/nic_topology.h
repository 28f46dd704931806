// Where each RDMA NIC sits (NUMA node, PCIe path), read from sysfs, and which NICs suit a buffer.
// The sysfs root is a parameter so tests use fake trees. No verbs calls.
//
// Layout read (as Linux exposes it):
//   <root>/class/infiniband/<dev>/device  -> symlink to the NIC's PCI function under <root>/devices
//   <that>/numa_node                      -> NUMA node, -1 when unknown
//   <root>/bus/pci/devices/<bdf>          -> symlink to a PCI function (for "pci:<bdf>" buffers)
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace yuebing::transport::rdma {

struct NicInfo {
  std::string name;    // e.g. "mlx5_0"
  int numa_node = -1;  // -1: unknown
  // PCIe path from the root complex, e.g. {"pci0000:3a", "0000:3a:00.0", "0000:3b:00.0"};
  // empty when the device link could not be resolved (e.g. a virtual rxe device).
  std::vector<std::string> pci_path;
};

// Lists <root>/class/infiniband, sorted by name. A missing class directory yields an empty list
// (no RDMA NICs). Errors: kInvalidArgument for an unreadable numa_node file content.
absl::StatusOr<std::vector<NicInfo>> ReadNicTopology(const std::string& sysfs_root);

// Hops between two PCIe paths through their deepest common ancestor; paths on different root
// complexes (or unknown) count as far (1000).
int PciDistance(const std::vector<std::string>& a, const std::vector<std::string>& b);

// NICs for a buffer at `location` ("cpu:<numa>", "pci:<domain:bus:dev.fn>", anything else =
// no preference), best first. `preferred` holds the best tier (same NUMA node, or the least PCIe
// hops); `others` the rest, in name order, used when a preferred NIC fails. When nothing matches,
// every NIC is preferred. `nics` indices refer to the input vector.
struct NicPreference {
  std::vector<size_t> preferred;
  std::vector<size_t> others;
};
NicPreference SelectNics(const std::vector<NicInfo>& nics, const std::string& location,
                         const std::string& sysfs_root);

}  // namespace yuebing::transport::rdma
