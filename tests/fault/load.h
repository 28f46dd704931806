// A put/get load for fault tests: threads that each put fresh keys and read back keys they put,
// every call going through a Checker (which verifies bytes and times calls). Runs until Stop().
//
// Thread safety: Start/Stop from one thread; the load threads share only the Checker and clients
// (both thread-safe).
#pragma once

#include <atomic>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fault/checker.h"
#include "yuebing/store/client.h"

namespace yuebing::fault {

class Load {
 public:
  struct Options {
    std::string prefix = "load";
    size_t min_size = 1024;
    size_t max_size = 16 * 1024;  // small, so that the faults and not a full cluster show
    master::ReplicateConfig config{};
    // Optional: a function choosing the config per put (e.g. a preferred segment for some).
    std::function<master::ReplicateConfig(uint64_t n)> config_for{};
  };

  Load(Checker& checker, Options options) : checker_(checker), options_(std::move(options)) {}
  ~Load() { Stop(); }

  // One thread per client in `clients` (a client may appear more than once).
  void Start(const std::vector<store::Client*>& clients) {
    for (size_t t = 0; t < clients.size(); ++t) {
      threads_.emplace_back([this, t, client = clients[t]] { Run(t, *client); });
    }
  }
  void Stop() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  uint64_t iterations() const { return iterations_.load(); }

 private:
  void Run(size_t thread, store::Client& client) {
    std::mt19937_64 random(thread * 7919 + 17);
    std::vector<std::string> written;
    for (uint64_t n = 0; !stop_; ++n) {
      const std::string key = absl::StrCat(options_.prefix, "-", thread, "-", n);
      const size_t size =
          options_.min_size + random() % (options_.max_size - options_.min_size + 1);
      master::ReplicateConfig config =
          options_.config_for ? options_.config_for(n) : options_.config;
      if (checker_.Put(client, key, 1, size, config).ok()) written.push_back(key);
      if (!written.empty()) {
        // Mostly the newest keys, sometimes an old one (its replicas may be gone by now).
        const size_t pick = random() % 4 == 0 ? random() % written.size() : written.size() - 1;
        (void)checker_.Get(client, written[pick]);
      }
      ++iterations_;
    }
  }

  Checker& checker_;
  const Options options_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> iterations_{0};
  std::vector<std::thread> threads_;
};

}  // namespace yuebing::fault
