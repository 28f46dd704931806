#include "transport/rdma/nic_topology.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace yuebing::transport::rdma {
namespace {
namespace fs = std::filesystem;

// A fake sysfs tree laid out as Linux does: PCI functions under devices/, class and bus links.
class FakeSysfs {
 public:
  FakeSysfs() {
    std::string pattern = (fs::temp_directory_path() / "yb_sysfs_XXXXXX").string();
    root_ = mkdtemp(pattern.data());
  }
  ~FakeSysfs() { fs::remove_all(root_); }
  const std::string& root() const { return root_; }

  // Creates the PCI function at `pci_path` (e.g. "pci0000:00/0000:00:01.0/0000:01:00.0").
  fs::path AddPci(const std::string& pci_path, int numa_node) {
    fs::path dir = fs::path(root_) / "devices" / pci_path;
    fs::create_directories(dir);
    std::ofstream(dir / "numa_node") << numa_node << "\n";
    fs::path bus = fs::path(root_) / "bus" / "pci" / "devices";
    fs::create_directories(bus);
    fs::create_symlink(dir, bus / dir.filename());
    return dir;
  }
  void AddNic(const std::string& name, const std::string& pci_path, int numa_node) {
    fs::path dir = AddPci(pci_path, numa_node);
    fs::path nic = fs::path(root_) / "class" / "infiniband" / name;
    fs::create_directories(nic);
    fs::create_symlink(dir, nic / "device");
  }

 private:
  std::string root_;
};

TEST(NicTopologyTest, NoInfinibandClassMeansNoNics) {
  FakeSysfs sysfs;
  auto nics = ReadNicTopology(sysfs.root());
  ASSERT_TRUE(nics.ok());
  EXPECT_TRUE(nics->empty());
  EXPECT_TRUE(ReadNicTopology("/nonexistent/sysfs")->empty());
}

TEST(NicTopologyTest, ReadsNumaAndPciPathSortedByName) {
  FakeSysfs sysfs;
  sysfs.AddNic("mlx5_1", "pci0000:80/0000:80:01.0/0000:81:00.0", 1);
  sysfs.AddNic("mlx5_0", "pci0000:00/0000:00:01.0/0000:01:00.0", 0);
  auto nics = ReadNicTopology(sysfs.root());
  ASSERT_TRUE(nics.ok()) << nics.status();
  ASSERT_EQ(nics->size(), 2u);
  EXPECT_EQ((*nics)[0].name, "mlx5_0");
  EXPECT_EQ((*nics)[0].numa_node, 0);
  EXPECT_EQ((*nics)[0].pci_path,
            (std::vector<std::string>{"pci0000:00", "0000:00:01.0", "0000:01:00.0"}));
  EXPECT_EQ((*nics)[1].numa_node, 1);
}

TEST(NicTopologyTest, VirtualDeviceWithoutPciLinkIsListedWithoutPath) {
  FakeSysfs sysfs;
  fs::create_directories(fs::path(sysfs.root()) / "class" / "infiniband" / "rxe0");
  auto nics = ReadNicTopology(sysfs.root());
  ASSERT_TRUE(nics.ok());
  ASSERT_EQ(nics->size(), 1u);
  EXPECT_EQ((*nics)[0].numa_node, -1);
  EXPECT_TRUE((*nics)[0].pci_path.empty());
}

TEST(NicTopologyTest, RejectsGarbageNumaNode) {
  FakeSysfs sysfs;
  sysfs.AddNic("mlx5_0", "pci0000:00/0000:00:01.0", 0);
  std::ofstream(fs::path(sysfs.root()) / "devices/pci0000:00/0000:00:01.0/numa_node") << "zero";
  EXPECT_EQ(ReadNicTopology(sysfs.root()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NicTopologyTest, PciDistanceCountsHopsThroughCommonSwitch) {
  std::vector<std::string> gpu = {"pci0000:00", "0000:00:01.0", "0000:02:00.0", "0000:03:00.0"};
  std::vector<std::string> near = {"pci0000:00", "0000:00:01.0", "0000:02:00.0", "0000:04:00.0"};
  std::vector<std::string> far = {"pci0000:00", "0000:00:02.0", "0000:05:00.0"};
  std::vector<std::string> other_root = {"pci0000:80", "0000:80:01.0"};
  EXPECT_EQ(PciDistance(gpu, near), 2);
  EXPECT_EQ(PciDistance(gpu, far), 5);
  EXPECT_GT(PciDistance(gpu, other_root), PciDistance(gpu, far));
  EXPECT_GT(PciDistance(gpu, {}), PciDistance(gpu, far));
}

class NicSelectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Socket 0: two NICs, one behind the same PCIe switch as a GPU. Socket 1: one NIC.
    sysfs_.AddNic("mlx5_0", "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0", 0);
    sysfs_.AddNic("mlx5_1", "pci0000:00/0000:00:03.0/0000:05:00.0", 0);
    sysfs_.AddNic("mlx5_2", "pci0000:80/0000:80:01.0/0000:81:00.0", 1);
    sysfs_.AddPci("pci0000:00/0000:00:01.0/0000:01:00.0/0000:03:00.0", 0);  // GPU
    sysfs_.AddPci("pci0000:c0/0000:c0:01.0/0000:c1:00.0", 1);  // GPU on its own root, socket 1
    auto nics = ReadNicTopology(sysfs_.root());
    ASSERT_TRUE(nics.ok());
    nics_ = *nics;
  }
  FakeSysfs sysfs_;
  std::vector<NicInfo> nics_;
};

TEST_F(NicSelectionTest, CpuMemoryPrefersNicsOfItsNumaNode) {
  NicPreference p = SelectNics(nics_, "cpu:0", sysfs_.root());
  EXPECT_EQ(p.preferred, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(p.others, (std::vector<size_t>{2}));
  p = SelectNics(nics_, "cpu:1", sysfs_.root());
  EXPECT_EQ(p.preferred, (std::vector<size_t>{2}));
  EXPECT_EQ(p.others, (std::vector<size_t>{0, 1}));
}

TEST_F(NicSelectionTest, PciDevicePrefersTheNicBehindTheSameSwitch) {
  NicPreference p = SelectNics(nics_, "pci:0000:03:00.0", sysfs_.root());
  EXPECT_EQ(p.preferred, (std::vector<size_t>{0}));
  EXPECT_EQ(p.others, (std::vector<size_t>{1, 2}));
}

TEST_F(NicSelectionTest, PciDeviceOnAnotherRootFallsBackToItsNumaNode) {
  NicPreference p = SelectNics(nics_, "pci:0000:c1:00.0", sysfs_.root());
  EXPECT_EQ(p.preferred, (std::vector<size_t>{2}));
}

TEST_F(NicSelectionTest, UnknownLocationOrNodeUsesEveryNic) {
  for (const char* location : {"*", "cuda:0", "cpu:7", "cpu:x", "pci:0000:ff:00.0", ""}) {
    NicPreference p = SelectNics(nics_, location, sysfs_.root());
    EXPECT_EQ(p.preferred, (std::vector<size_t>{0, 1, 2})) << location;
    EXPECT_TRUE(p.others.empty()) << location;
  }
}

}  // namespace
}  // namespace yuebing::transport::rdma
