#pragma once

#include <string_view>
#include <vector>

namespace herald::api {

/// A file built into the binary (cmake/EmbedFiles.cmake): the OpenAPI document and the
/// operator console, served as they were when herald was built.
struct embedded_file {
  std::string_view name; ///< "openapi.yaml", "console/index.html", …
  std::string_view bytes;
};

/// Every embedded file, in the order the build listed them.
const std::vector<embedded_file>& embedded_files();

} // namespace herald::api
