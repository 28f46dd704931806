// Helpers shared by the Python bindings: Mooncake return codes from absl::Status, read-only views
// of Python bytes-like objects, and raw addresses passed from Python as integers.
//
// Threading: ByteView must be created and destroyed while holding the GIL; the memory it points to
// may be read without the GIL while the view is alive (the exporter keeps it valid and unmoved).
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "yuebing/common/error_code.h"

namespace yuebing::python {

// Mooncake's INVALID_PARAMS (-600): bad arguments, or a store used before setup()/after close().
inline constexpr int kInvalidParams = static_cast<int>(ErrorCode::kInvalidParams);

// 0 for OK, otherwise the Mooncake numeric code carried by (or derived from) the status. Errors
// other than a miss are logged at debug level (YUEBING_LOG_LEVEL=debug shows why a call failed).
int Code(const absl::Status& status);
// Code of each status, in order.
std::vector<int> Codes(const std::vector<absl::Status>& statuses);

// A read-only, C-contiguous view of a Python object supporting the buffer protocol (bytes,
// bytearray, memoryview, numpy arrays, ...). Throws pybind11::type_error (TypeError in Python) for
// objects without a contiguous buffer, as pybind11's own `py::buffer` arguments do.
class ByteView {
 public:
  explicit ByteView(pybind11::handle object);
  ~ByteView();
  ByteView(ByteView&& other) noexcept;
  ByteView(const ByteView&) = delete;
  ByteView& operator=(const ByteView&) = delete;
  ByteView& operator=(ByteView&&) = delete;

  absl::string_view view() const {
    return absl::string_view(static_cast<const char*>(buffer_.buf),
                             static_cast<size_t>(buffer_.len));
  }

 private:
  Py_buffer buffer_{};
  bool held_ = false;
};

// Views of every object in a sequence; throws like ByteView.
std::vector<ByteView> ViewAll(const pybind11::sequence& objects);

// A process address given from Python as an integer (e.g. numpy's ctypes.data, torch's data_ptr()).
inline void* AddressOf(uintptr_t address) { return reinterpret_cast<void*>(address); }

// Lower-cases ASCII letters (protocol names are matched case-insensitively, as Mooncake's
// configuration helpers do).
std::string AsciiLower(absl::string_view text);

}  // namespace yuebing::python
