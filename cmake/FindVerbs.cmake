# Decides whether the RDMA transport is built (YUEBING_WITH_RDMA: AUTO, ON, OFF). It needs only
# the libibverbs headers (libibverbs-dev) at build time: the library itself is loaded with dlopen
# at run time (src/transport/rdma/verbs_loader.cc), so the same binaries and wheel run with or
# without rdma-core installed. Sets YUEBING_HAVE_RDMA and YUEBING_VERBS_INCLUDE_DIR.
set(YUEBING_HAVE_RDMA OFF)
if(NOT YUEBING_WITH_RDMA STREQUAL "OFF")
  find_path(YUEBING_VERBS_INCLUDE_DIR infiniband/verbs.h)
  if(YUEBING_VERBS_INCLUDE_DIR)
    set(YUEBING_HAVE_RDMA ON)
  endif()
  if(YUEBING_WITH_RDMA STREQUAL "ON" AND NOT YUEBING_HAVE_RDMA)
    message(FATAL_ERROR
      "YUEBING_WITH_RDMA=ON but infiniband/verbs.h was not found (apt install libibverbs-dev)")
  endif()
endif()
message(STATUS "yuebing RDMA transport: ${YUEBING_HAVE_RDMA} (YUEBING_WITH_RDMA=${YUEBING_WITH_RDMA})")
