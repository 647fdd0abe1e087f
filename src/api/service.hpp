#pragma once

#include "domain/message.hpp"
#include "domain/validation.hpp"
#include "persistence/task_store.hpp"

#include <functional>
#include <optional>
#include <string>
#include <variant>

namespace herald::api {

/// A refusal that is not the client's fault in the request's content: 503 overloaded, 503
/// unavailable (database down), 504 timeout. Same shape as a validation error.
using service_error = domain::validation_error;

/// What the HTTP routes need from the running service. Implemented over the actors by
/// app/; every callback may run on any thread and is called exactly once.
class service {
public:
  virtual ~service() = default;

  /// Business rules for planning a request (channels, routes, templates, limits).
  virtual const domain::routing_rules& rules() const = 0;

  /// Claims a planned message; answers after the rows are committed.
  virtual void submit(domain::message_plan plan,
                      std::function<void(std::variant<persistence::claim_result, service_error>)>
                          done) = 0;

  /// Looks a message up; nullopt when unknown.
  virtual void find_message(
      std::string message_id,
      std::function<void(std::variant<std::optional<persistence::message_view>, service_error>)>
          done) = 0;

  /// Whether the database answers and the actors run; `reason` says what is not ready.
  virtual void readiness(std::function<void(bool ready, std::string reason)> done) = 0;
};

} // namespace herald::api
