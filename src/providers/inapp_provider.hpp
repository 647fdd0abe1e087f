#pragma once

#include "providers/provider.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace herald::providers {

/// One inapp channel: how its inbox writer batches (docs/channels.md).
struct inapp_config {
  std::size_t batch_max = 500; ///< items written in one transaction, at most

  /// Empty when usable; otherwise a one-line reason naming the field (for config errors).
  std::string validate() const;
};

/// Puts tasks into their users' inboxes in one transaction, blocking: returns the ids that are in
/// the inbox afterwards (written now or before); throws when the transaction failed. Called on
/// the writer's own thread only.
using inbox_write =
    std::function<std::vector<std::string>(const std::vector<std::string>& task_ids)>;

/// The in-app inbox as a provider: a send puts the task's item into its user's inbox, in
/// herald's own database (persistence::task_store::deliver_to_inbox, on a connection of its
/// own). send() only queues: one writer thread takes every send that came while the previous
/// transaction ran (at most batch_max) into the next one, and answers each after COMMIT —
/// success with the task id as the provider message id; permanent for a task the database does
/// not know; retryable when the transaction failed. Items are keyed by task, so a resend (a
/// retry after an unknown commit, recovery after a crash) finds its item and writes nothing:
/// exactly one item per task. Sends still queued when the adapter goes are answered timeout
/// ("adapter stopped"), unwritten.
class inapp_provider final : public provider_adapter {
public:
  /// Throws std::invalid_argument when `config.validate()` refuses it.
  inapp_provider(inapp_config config, inbox_write write);
  ~inapp_provider() override;
  inapp_provider(const inapp_provider&) = delete;
  inapp_provider& operator=(const inapp_provider&) = delete;

  void send(provider_request request, provider_callback done) override;

  struct writer; ///< the queue and the thread writing it

private:
  std::unique_ptr<writer> writer_;
};

} // namespace herald::providers
