#pragma once

#include <string_view>

namespace herald::app {

/// Tells systemd (a unit of Type=notify) how herald is doing: "READY=1" once it serves,
/// "STOPPING=1" when it starts draining. Does nothing when herald was not started by a service
/// manager ($NOTIFY_SOCKET unset); a failure to send is logged and otherwise ignored, since the
/// manager then times the start out itself.
void notify_service_manager(std::string_view state);

} // namespace herald::app
