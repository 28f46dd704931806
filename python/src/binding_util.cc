#include "binding_util.h"

#include <utility>

#include "yuebing/common/logging.h"

namespace yuebing::python {

namespace py = pybind11;

int Code(const absl::Status& status) {
  ErrorCode code = ToErrorCode(status);
  if (code != ErrorCode::kOk && code != ErrorCode::kObjectNotFound) {
    // spdlog::debug, not YB_LOG_DEBUG: the macro is compiled out of release builds.
    spdlog::debug("yuebing: call failed: {}", status.ToString());
  }
  return static_cast<int>(code);
}

std::vector<int> Codes(const std::vector<absl::Status>& statuses) {
  std::vector<int> out;
  out.reserve(statuses.size());
  for (const absl::Status& status : statuses) out.push_back(Code(status));
  return out;
}

ByteView::ByteView(py::handle object) {
  if (PyObject_GetBuffer(object.ptr(), &buffer_, PyBUF_SIMPLE) != 0) {
    PyErr_Clear();
    throw py::type_error(std::string("expected a contiguous bytes-like object, got ") +
                         Py_TYPE(object.ptr())->tp_name);
  }
  held_ = true;
}

ByteView::~ByteView() {
  if (held_) PyBuffer_Release(&buffer_);
}

ByteView::ByteView(ByteView&& other) noexcept : buffer_(other.buffer_), held_(other.held_) {
  other.held_ = false;
  other.buffer_ = Py_buffer{};
}

std::vector<ByteView> ViewAll(const py::sequence& objects) {
  std::vector<ByteView> views;
  views.reserve(objects.size());
  for (py::handle object : objects) views.emplace_back(object);
  return views;
}

std::string AsciiLower(absl::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace yuebing::python
