// Fuzzes the HTTP metadata server through real requests from an httplib client. One server per
// process (small limits, so the fuzzer reaches them); each input is a list of operations
//   op(1 byte) key_len(1 byte) key value_len(2 bytes, little-endian) value
// run against the server and against an in-memory model. Checked: every reply status is one
// the contract allows; GET returns exactly the last PUT value; DELETE succeeds only for present
// keys; the server stays up. The keys an input created are deleted at its end.
#include <httplib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "common/http_metadata_server_internal.h"
#include "yuebing/common/http_metadata_server.h"

namespace {

constexpr size_t kMaxKeyBytes = 64;
constexpr size_t kMaxValueBytes = 1024;
constexpr size_t kMaxKeys = 32;

struct Fixture {
  std::unique_ptr<yuebing::HttpMetadataServer> server;
  std::unique_ptr<httplib::Client> client;
};

Fixture* Setup() {
  auto* f = new Fixture;
  yuebing::internal::HttpMetadataServerLimits limits;
  limits.max_key_bytes = kMaxKeyBytes;
  limits.max_value_bytes = kMaxValueBytes;
  limits.max_keys = kMaxKeys;
  auto server = yuebing::internal::StartHttpMetadataServer("127.0.0.1", 0, limits);
  if (!server.ok()) std::abort();
  f->server = std::move(*server);
  f->client = std::make_unique<httplib::Client>("127.0.0.1", f->server->port());
  f->client->set_keep_alive(true);
  f->client->set_tcp_nodelay(true);
  return f;
}

[[noreturn]] void Fail(const char* what, const std::string& key, int status) {
  std::fprintf(stderr, "%s: key of %zu bytes, status %d\n", what, key.size(), status);
  std::abort();
}

std::string PathOf(const std::string& key) {
  return "/metadata?key=" + httplib::detail::encode_query_param(key);
}

// Bytes consumed from the front of an input.
struct Reader {
  const uint8_t* data;
  size_t size;
  std::string Take(size_t n) {
    n = n < size ? n : size;
    std::string out(reinterpret_cast<const char*>(data), n);
    data += n;
    size -= n;
    return out;
  }
  size_t Byte() { return size > 0 ? static_cast<uint8_t>(Take(1)[0]) : 0; }
};

// The status a request about `key` gets before the key is looked up, or 0.
int KeyError(const std::string& key) {
  if (key.empty()) return 400;
  if (key.size() > kMaxKeyBytes) return 414;
  return 0;
}

void RunOne(httplib::Client& client, std::map<std::string, std::string>& model, Reader& in) {
  const size_t op = in.Byte() % 3;
  std::string key = in.Take(in.Byte());
  const size_t value_low = in.Byte();
  const size_t value_len = value_low | (in.Byte() << 8);
  const int key_error = KeyError(key);
  if (op == 0) {
    auto res = client.Get(PathOf(key));
    if (!res) Fail("GET failed", key, -1);
    auto it = model.find(key);
    int expected = key_error ? key_error : (it == model.end() ? 404 : 200);
    if (res->status != expected) Fail("GET status", key, res->status);
    if (expected == 200 && res->body != it->second) Fail("GET value differs", key, res->status);
  } else if (op == 1) {
    std::string value = in.Take(value_len);
    auto res = client.Put(PathOf(key), value, "application/octet-stream");
    if (!res) Fail("PUT failed", key, -1);
    int expected = key_error;
    if (!expected && value.size() > kMaxValueBytes) expected = 413;
    if (!expected && !model.count(key) && model.size() >= kMaxKeys) expected = 507;
    if (!expected) expected = 200;
    // The server counts keys other inputs left behind too; none should remain.
    if (res->status != expected) Fail("PUT status", key, res->status);
    if (expected == 200) model[key] = value;
  } else {
    auto res = client.Delete(PathOf(key));
    if (!res) Fail("DELETE failed", key, -1);
    int expected = key_error ? key_error : (model.erase(key) ? 200 : 404);
    if (res->status != expected) Fail("DELETE status", key, res->status);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* fixture = Setup();
  std::map<std::string, std::string> model;
  Reader in{data, size};
  for (int ops = 0; in.size > 0 && ops < 64; ++ops) RunOne(*fixture->client, model, in);
  for (const auto& [key, value] : model) {
    auto res = fixture->client->Delete(PathOf(key));
    if (!res || res->status != 200) Fail("cleanup DELETE", key, res ? res->status : -1);
  }
  if (fixture->server->KeyCount() != 0) Fail("keys left behind", "", 0);
  return 0;
}
