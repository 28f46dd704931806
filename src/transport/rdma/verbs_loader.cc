// libibverbs loaded at run time. yuebing is not linked against libibverbs: this file defines the
// libibverbs entry points the RDMA transport calls (the inline helpers of <infiniband/verbs.h>
// call them too) and forwards each to the real function, found with dlopen("libibverbs.so.1")
// on first use. So one build (and one wheel) runs on hosts with and without rdma-core:
//   - library present: every call goes to the real libibverbs (its providers found as usual);
//   - library absent: ibv_get_device_list reports no device (errno ENOSYS), the RDMA transport
//     sees no device and the engine uses TCP, as on a host without an RDMA NIC. The other entry
//     points are only reached through a device, and fail with their error value if reached.
// The definitions are hidden (never exported from our binaries or the Python module), so a
// process that also links the real libibverbs (NCCL, torch) keeps its own calls untouched.
// Thread safety: loading happens once (std::call_once); the table is read-only afterwards.
#include <dlfcn.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <mutex>

#include "yuebing/common/logging.h"

namespace {

struct VerbsTable {
  void* handle = nullptr;
  ibv_device** (*get_device_list)(int*) = nullptr;
  void (*free_device_list)(ibv_device**) = nullptr;
  const char* (*get_device_name)(ibv_device*) = nullptr;
  ibv_context* (*open_device)(ibv_device*) = nullptr;
  int (*close_device)(ibv_context*) = nullptr;
  int (*query_device)(ibv_context*, ibv_device_attr*) = nullptr;
  int (*query_port)(ibv_context*, uint8_t, _compat_ibv_port_attr*) = nullptr;
  int (*query_gid)(ibv_context*, uint8_t, int, ibv_gid*) = nullptr;
  ibv_pd* (*alloc_pd)(ibv_context*) = nullptr;
  int (*dealloc_pd)(ibv_pd*) = nullptr;
  ibv_cq* (*create_cq)(ibv_context*, int, void*, ibv_comp_channel*, int) = nullptr;
  int (*destroy_cq)(ibv_cq*) = nullptr;
  ibv_mr* (*reg_mr)(ibv_pd*, void*, size_t, int) = nullptr;
  ibv_mr* (*reg_mr_iova2)(ibv_pd*, void*, size_t, uint64_t, unsigned int) = nullptr;
  int (*dereg_mr)(ibv_mr*) = nullptr;
  ibv_qp* (*create_qp)(ibv_pd*, ibv_qp_init_attr*) = nullptr;
  int (*destroy_qp)(ibv_qp*) = nullptr;
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int) = nullptr;
  const char* (*wc_status_str)(ibv_wc_status) = nullptr;
};

template <typename Fn>
void Bind(void* handle, const char* name, Fn* slot, bool* complete) {
  *slot = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*slot == nullptr) *complete = false;
}

// The loaded table, or nullptr when libibverbs (or one of its entry points) is missing.
const VerbsTable* Verbs() {
  static VerbsTable table;
  static const VerbsTable* loaded = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* handle = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      YB_LOG_DEBUG("libibverbs not loaded ({}): RDMA unavailable", dlerror());
      return;
    }
    bool complete = true;
    Bind(handle, "ibv_get_device_list", &table.get_device_list, &complete);
    Bind(handle, "ibv_free_device_list", &table.free_device_list, &complete);
    Bind(handle, "ibv_get_device_name", &table.get_device_name, &complete);
    Bind(handle, "ibv_open_device", &table.open_device, &complete);
    Bind(handle, "ibv_close_device", &table.close_device, &complete);
    Bind(handle, "ibv_query_device", &table.query_device, &complete);
    Bind(handle, "ibv_query_port", &table.query_port, &complete);
    Bind(handle, "ibv_query_gid", &table.query_gid, &complete);
    Bind(handle, "ibv_alloc_pd", &table.alloc_pd, &complete);
    Bind(handle, "ibv_dealloc_pd", &table.dealloc_pd, &complete);
    Bind(handle, "ibv_create_cq", &table.create_cq, &complete);
    Bind(handle, "ibv_destroy_cq", &table.destroy_cq, &complete);
    Bind(handle, "ibv_reg_mr", &table.reg_mr, &complete);
    Bind(handle, "ibv_reg_mr_iova2", &table.reg_mr_iova2, &complete);
    Bind(handle, "ibv_dereg_mr", &table.dereg_mr, &complete);
    Bind(handle, "ibv_create_qp", &table.create_qp, &complete);
    Bind(handle, "ibv_destroy_qp", &table.destroy_qp, &complete);
    Bind(handle, "ibv_modify_qp", &table.modify_qp, &complete);
    Bind(handle, "ibv_wc_status_str", &table.wc_status_str, &complete);
    if (!complete) {
      YB_LOG_WARN("libibverbs.so.1 lacks entry points yuebing needs (too old?): RDMA unavailable");
      dlclose(handle);
      return;
    }
    table.handle = handle;
    loaded = &table;
  });
  return loaded;
}

// Fails an entry point reached without a loaded library: errno ENOSYS and the call's error value.
template <typename T>
T Missing(T error_value) {
  errno = ENOSYS;
  return error_value;
}

}  // namespace

// The names are parenthesised where <infiniband/verbs.h> defines a function-like macro of the
// same name, so the macro does not expand and the real entry point is defined.
#define YB_VERBS_ENTRY extern "C" __attribute__((visibility("hidden")))

YB_VERBS_ENTRY ibv_device**(ibv_get_device_list)(int* num_devices) {
  const VerbsTable* v = Verbs();
  if (v == nullptr) {
    if (num_devices != nullptr) *num_devices = 0;
    return Missing<ibv_device**>(nullptr);
  }
  return v->get_device_list(num_devices);
}

YB_VERBS_ENTRY void ibv_free_device_list(ibv_device** list) {
  if (const VerbsTable* v = Verbs()) v->free_device_list(list);
}

YB_VERBS_ENTRY const char* ibv_get_device_name(ibv_device* device) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->get_device_name(device) : Missing<const char*>(nullptr);
}

YB_VERBS_ENTRY ibv_context* ibv_open_device(ibv_device* device) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->open_device(device) : Missing<ibv_context*>(nullptr);
}

YB_VERBS_ENTRY int ibv_close_device(ibv_context* context) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->close_device(context) : Missing(-1);
}

YB_VERBS_ENTRY int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->query_device(context, attr) : Missing(ENOSYS);
}

YB_VERBS_ENTRY int(ibv_query_port)(ibv_context* context, uint8_t port,
                                   _compat_ibv_port_attr* attr) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->query_port(context, port, attr) : Missing(ENOSYS);
}

YB_VERBS_ENTRY int ibv_query_gid(ibv_context* context, uint8_t port, int index, ibv_gid* gid) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->query_gid(context, port, index, gid) : Missing(-1);
}

YB_VERBS_ENTRY ibv_pd* ibv_alloc_pd(ibv_context* context) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->alloc_pd(context) : Missing<ibv_pd*>(nullptr);
}

YB_VERBS_ENTRY int ibv_dealloc_pd(ibv_pd* pd) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->dealloc_pd(pd) : Missing(ENOSYS);
}

YB_VERBS_ENTRY ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context,
                                     ibv_comp_channel* channel, int comp_vector) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->create_cq(context, cqe, cq_context, channel, comp_vector)
                      : Missing<ibv_cq*>(nullptr);
}

YB_VERBS_ENTRY int ibv_destroy_cq(ibv_cq* cq) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->destroy_cq(cq) : Missing(ENOSYS);
}

YB_VERBS_ENTRY ibv_mr*(ibv_reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->reg_mr(pd, addr, length, access) : Missing<ibv_mr*>(nullptr);
}

YB_VERBS_ENTRY ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                                        unsigned int access) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->reg_mr_iova2(pd, addr, length, iova, access) : Missing<ibv_mr*>(nullptr);
}

YB_VERBS_ENTRY int ibv_dereg_mr(ibv_mr* mr) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->dereg_mr(mr) : Missing(ENOSYS);
}

YB_VERBS_ENTRY ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->create_qp(pd, attr) : Missing<ibv_qp*>(nullptr);
}

YB_VERBS_ENTRY int ibv_destroy_qp(ibv_qp* qp) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->destroy_qp(qp) : Missing(ENOSYS);
}

YB_VERBS_ENTRY int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->modify_qp(qp, attr, mask) : Missing(ENOSYS);
}

YB_VERBS_ENTRY const char* ibv_wc_status_str(ibv_wc_status status) {
  const VerbsTable* v = Verbs();
  return v != nullptr ? v->wc_status_str(status) : "libibverbs not loaded";
}
