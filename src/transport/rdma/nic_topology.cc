#include "transport/rdma/nic_topology.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace yuebing::transport::rdma {
namespace fs = std::filesystem;
namespace {

constexpr int kFar = 1000;

// The PCIe path of a sysfs device link, relative to <root>/devices; empty if unresolvable.
std::vector<std::string> PciPathOf(const fs::path& link, const std::string& sysfs_root) {
  std::error_code ec;
  fs::path target = fs::canonical(link, ec);
  if (ec) return {};
  fs::path devices = fs::canonical(fs::path(sysfs_root) / "devices", ec);
  if (ec) return {};
  fs::path relative = target.lexically_relative(devices);
  if (relative.empty() || *relative.begin() == "..") return {};
  std::vector<std::string> out;
  for (const fs::path& part : relative) out.push_back(part.string());
  return out;
}

// numa_node next to a device link; -1 when absent. Errors on garbage.
absl::StatusOr<int> NumaNodeOf(const fs::path& device) {
  std::ifstream in(device / "numa_node");
  if (!in) return -1;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int node = -1;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &node) || node < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad numa_node '", text, "' in ", device.string()));
  }
  return node;
}

}  // namespace

absl::StatusOr<std::vector<NicInfo>> ReadNicTopology(const std::string& sysfs_root) {
  std::vector<NicInfo> out;
  fs::path dir = fs::path(sysfs_root) / "class" / "infiniband";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    NicInfo nic;
    nic.name = entry.path().filename().string();
    fs::path device = entry.path() / "device";
    absl::StatusOr<int> numa = NumaNodeOf(device);
    if (!numa.ok()) return numa.status();
    nic.numa_node = *numa;
    nic.pci_path = PciPathOf(device, sysfs_root);
    out.push_back(std::move(nic));
  }
  if (ec)
    return absl::UnavailableError(absl::StrCat("cannot list ", dir.string(), ": ", ec.message()));
  std::sort(out.begin(), out.end(),
            [](const NicInfo& a, const NicInfo& b) { return a.name < b.name; });
  return out;
}

int PciDistance(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.empty() || b.empty() || a.front() != b.front()) return kFar;
  size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  return static_cast<int>(a.size() + b.size() - 2 * common);
}

NicPreference SelectNics(const std::vector<NicInfo>& nics, const std::string& location,
                         const std::string& sysfs_root) {
  // Score every NIC (lower is better); kFar means "no information".
  std::vector<int> score(nics.size(), kFar);
  if (absl::StartsWith(location, "cpu:")) {
    int node = -1;
    if (absl::SimpleAtoi(location.substr(4), &node)) {
      for (size_t i = 0; i < nics.size(); ++i) {
        if (nics[i].numa_node == node) score[i] = 0;
      }
    }
  } else if (absl::StartsWith(location, "pci:")) {
    fs::path device = fs::path(sysfs_root) / "bus" / "pci" / "devices" / location.substr(4);
    std::vector<std::string> path = PciPathOf(device, sysfs_root);
    absl::StatusOr<int> numa = NumaNodeOf(device);
    for (size_t i = 0; i < nics.size(); ++i) {
      score[i] = PciDistance(path, nics[i].pci_path);
      // Same NUMA node but another root complex still beats a remote socket.
      if (score[i] == kFar && numa.ok() && *numa >= 0 && nics[i].numa_node == *numa) {
        score[i] = kFar - 1;
      }
    }
  }
  NicPreference out;
  int best = nics.empty() ? kFar : *std::min_element(score.begin(), score.end());
  for (size_t i = 0; i < nics.size(); ++i) {
    (score[i] == best ? out.preferred : out.others).push_back(i);
  }
  return out;
}

}  // namespace yuebing::transport::rdma
