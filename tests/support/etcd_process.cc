#include "support/etcd_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "absl/strings/str_cat.h"
#include "yuebing/common/status.h"

namespace yuebing::test_support {
namespace {

using std::chrono::milliseconds;

constexpr int kMaxStartAttempts = 3;
constexpr milliseconds kPollInterval(50);
constexpr milliseconds kHealthTimeout(500);

constexpr milliseconds kPauseTimeout(5000);

// True when every thread of `pid` is in the stopped ('T') or traced ('t') state, read from
// /proc/<pid>/task/<tid>/stat (the state is the first field after the last ')').
bool AllThreadsStopped(pid_t pid) {
  std::error_code error;
  std::filesystem::directory_iterator tasks(absl::StrCat("/proc/", pid, "/task"), error);
  if (error) return false;
  for (const auto& task : tasks) {
    std::ifstream stat(task.path() / "stat");
    std::string line((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos || paren + 2 >= line.size()) continue;  // thread just exited
    const char state = line[paren + 2];
    if (state != 'T' && state != 't') return false;
  }
  return true;
}

std::string Url(uint16_t port) { return absl::StrCat("http://127.0.0.1:", port); }

// Closes `fd` on scope exit.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

}  // namespace

absl::StatusOr<uint16_t> PickFreeTcpPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoToStatus("socket");
  FdCloser closer(fd);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoToStatus("bind 127.0.0.1:0");
  }
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return ErrnoToStatus("getsockname");
  }
  return ntohs(addr.sin_port);
}

absl::StatusOr<std::unique_ptr<EtcdProcess>> EtcdProcess::Start(Options options) {
  if (const char* env = std::getenv("YUEBING_ETCD_BIN"); env != nullptr && *env != '\0') {
    options.binary = env;
  }
  if (::access(options.binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat(
        "etcd binary not found or not executable at ", options.binary,
        "; the etcd tests need a real etcd: install it (Debian: apt-get install etcd-server) or "
        "set YUEBING_ETCD_BIN"));
  }
  absl::Status last;
  // A port picked free may be taken before etcd binds it; then etcd exits and we retry.
  for (int attempt = 0; attempt < kMaxStartAttempts; ++attempt) {
    std::unique_ptr<EtcdProcess> etcd(new EtcdProcess());
    last = etcd->Spawn(options);
    if (last.ok()) last = etcd->WaitHealthy(options.ready_timeout);
    if (last.ok()) return etcd;
    if (etcd->running()) break;  // alive but not healthy in time: retrying will not help
  }
  return last;
}

absl::Status EtcdProcess::Spawn(const Options& options) {
  char dir_template[] = "/tmp/yb-etcd-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) return ErrnoToStatus("mkdtemp");
  dir_ = dir_template;
  YB_ASSIGN_OR_RETURN(client_port_, PickFreeTcpPort());
  YB_ASSIGN_OR_RETURN(peer_port_, PickFreeTcpPort());
  if (peer_port_ == client_port_) return absl::UnavailableError("picked the same port twice");

  std::vector<std::string> args = {
      options.binary,
      "--name=" + options.name,
      "--data-dir=" + dir_ + "/data",
      "--listen-client-urls=" + Url(client_port_),
      "--advertise-client-urls=" + Url(client_port_),
      "--listen-peer-urls=" + Url(peer_port_),
      "--initial-advertise-peer-urls=" + Url(peer_port_),
      "--initial-cluster=" + options.name + "=" + Url(peer_port_),
      "--initial-cluster-state=new",
      "--heartbeat-interval=20",
      "--election-timeout=200",
      "--logger=zap",
      "--log-outputs=stderr",
      "--log-level=warn",
  };
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  const std::string log_path = dir_ + "/etcd.log";
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) return ErrnoToStatus("open " + log_path);
  FdCloser log_closer(log_fd);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) return ErrnoToStatus("open /dev/null");
  FdCloser null_closer(null_fd);

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoToStatus("fork");
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  return absl::OkStatus();
}

absl::Status EtcdProcess::WaitHealthy(milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last_answer = "no answer";
  while (std::chrono::steady_clock::now() < deadline) {
    int wstatus = 0;
    if (::waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat("etcd exited during startup (status ", wstatus,
                                                 "); log tail:\n", LogTail()));
    }
    httplib::Client client("127.0.0.1", client_port_);
    client.set_connection_timeout(kHealthTimeout);
    client.set_read_timeout(kHealthTimeout);
    client.set_write_timeout(kHealthTimeout);
    if (auto res = client.Get("/health")) {
      if (res->status == 200 && res->body.find("\"true\"") != std::string::npos) {
        return absl::OkStatus();
      }
      last_answer = absl::StrCat("HTTP ", res->status, " ", res->body);
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  return absl::UnavailableError(absl::StrCat("etcd not healthy on ", client_url(), " after ",
                                             timeout.count(), " ms (", last_answer,
                                             "); log tail:\n", LogTail()));
}

EtcdProcess::~EtcdProcess() {
  Kill();
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

std::string EtcdProcess::endpoint() const { return absl::StrCat("127.0.0.1:", client_port_); }

std::string EtcdProcess::client_url() const { return Url(client_port_); }

void EtcdProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int wstatus = 0;
  while (::waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

void EtcdProcess::Pause() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGSTOP);
  // kill() only queues the signal: a thread running on another core may still answer a request
  // for a moment. Wait until every thread of etcd reports the stopped state.
  const auto deadline = std::chrono::steady_clock::now() + kPauseTimeout;
  while (!AllThreadsStopped(pid_) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
  }
}

void EtcdProcess::Resume() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

std::string EtcdProcess::LogTail(size_t max_bytes) const {
  std::ifstream log(dir_ + "/etcd.log", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  if (text.size() > max_bytes) text.erase(0, text.size() - max_bytes);
  return text;
}

}  // namespace yuebing::test_support
