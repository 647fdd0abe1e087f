#pragma once

// A running `herald serve` for end-to-end tests, and reading its metrics.

#include "support/herald_process.hpp"
#include "support/http_client.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

namespace herald::test {

inline const std::string host = "127.0.0.1";

/// A herald serving on a free port; killed if a test fails midway.
class running_herald {
public:
  /// `database` empty: a fresh SQLite file in a temporary folder. `config` non-empty: the
  /// text of a --config file (its `listen` and `database` are overridden). `extra`: more
  /// options for `herald serve`, e.g. {"--test-clock", "2026-12-03T15:00:00Z"}.
  explicit running_herald(const std::string& database, const std::string& config = {},
                          const std::vector<std::string>& extra = {});

  std::uint16_t port() const { return port_; }
  herald_process& process() { return process_; }

  http_response get(const std::string& target);
  http_response post(const std::string& body, const header_list& headers = json_headers());
  http_response post_to(const std::string& target, const std::string& body = {});
  std::string metrics();

  /// Polls /metrics every 20 ms until `done(text)` or `timeout`; the last text.
  std::string wait_for_metrics(const std::function<bool(const std::string&)>& done,
                               std::chrono::milliseconds timeout = std::chrono::seconds(30));

private:
  static std::vector<std::string> arguments(std::uint16_t port, const temp_dir& dir,
                                            const std::string& database, const std::string& config,
                                            const std::vector<std::string>& extra);

  temp_dir dir_{"herald-e2e"}; // declared first: outlives the process writing into it
  std::uint16_t port_;
  herald_process process_;
};

/// Lifts this test process's soft limit on open files to its hard limit, for tests that hold
/// many sockets; fails the test when even that is below `needed`.
void raise_own_open_file_limit(std::size_t needed);

/// `herald keys create` against `database` (a --db URL): the key it printed.
std::string create_api_key(const std::string& database, const std::string& tenant,
                           const std::string& scopes);

/// Submits one message for a single channel with a title and body (POST /v1/messages, which
/// must answer 202); its message id. biz_type "E2E", user "u-<biz_id>".
std::string submit_to(running_herald& herald, const std::string& channel, const std::string& biz_id,
                      const std::string& recipient);

/// An ORDER_SHIPPED event for sms, wechat and app with literal content, user "u-<biz_id>": a
/// POST /v1/messages body, or an item of a batch.
boost::json::object three_channel_event(const std::string& biz_id);

/// The message's first task as GET /v1/messages/{id} shows it (a JSON object).
boost::json::object first_task(running_herald& herald, const std::string& message_id);

/// Whether the message's first task reaches `status` within `bound` (polled every 50 ms).
bool first_task_reaches(running_herald& herald, const std::string& message_id,
                        const std::string& status,
                        std::chrono::milliseconds bound = std::chrono::seconds(30));

/// Polls the message's first task every 50 ms until its status is `status`, at most 30 s, and
/// returns it (the test fails, showing the task and herald's log, if it never gets there).
boost::json::object wait_for_status(running_herald& herald, const std::string& message_id,
                                    const std::string& status);

/// Sum of every sample of `name` whose labels contain each of `labels` (e.g.
/// `outcome="success"`).
double metric_sum(const std::string& text, const std::string& name,
                  const std::vector<std::string>& labels = {});

} // namespace herald::test
