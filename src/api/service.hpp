#pragma once

#include "domain/cluster_view.hpp"
#include "domain/message.hpp"
#include "domain/policy.hpp"
#include "domain/push_seal.hpp"
#include "domain/template_definition.hpp"
#include "domain/validation.hpp"
#include "persistence/task_store.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace herald::api {

/// A refusal that is not the client's fault in the request's content: 503 overloaded, 503
/// unavailable (database down or too slow to answer). Same shape as a validation error.
using service_error = domain::validation_error;

/// What the HTTP routes need from the running service. Implemented over the actors by
/// app/; every callback may run on any thread and is called exactly once.
class service {
public:
  virtual ~service() = default;

  /// Business rules for planning a request (channels, routes, templates, limits).
  virtual const domain::routing_rules& rules() const = 0;

  /// The installation's secret that planning keys message and task ids with.
  virtual const domain::id_secret& id_secret() const = 0;

  /// Claims a planned message; answers after the rows are committed.
  virtual void
  submit(domain::message_plan plan,
         std::function<void(std::variant<persistence::claim_result, service_error>)> done) = 0;

  /// Claims planned messages together, in one group commit; answers one result per plan, in
  /// plan order, after the rows are committed — or one error for all of them.
  virtual void submit_batch(
      std::vector<domain::message_plan> plans,
      std::function<void(std::variant<std::vector<persistence::claim_result>, service_error>)>
          done) = 0;

  /// Looks a message of `tenant` (empty: any tenant) up; nullopt when unknown or another
  /// tenant's.
  virtual void find_message(
      std::string tenant, std::string message_id,
      std::function<void(std::variant<std::optional<persistence::message_view>, service_error>)>
          done) = 0;

  /// Dead letters (DEAD, FAILED and SUPPRESSED tasks) of `tenant` that pass `filter`, after
  /// `after_task_id`.
  virtual void list_dead_letters(
      std::string tenant, persistence::dead_letter_filter filter, std::string after_task_id,
      std::size_t limit,
      std::function<void(std::variant<std::vector<persistence::dead_letter>, service_error>)>
          done) = 0;

  /// Replays a dead letter of `tenant` (empty: any tenant): same task, same key, attempt
  /// counter continues; sent again once. Another tenant's task is not_found.
  virtual void replay_dead_letter(
      std::string tenant, std::string task_id,
      std::function<void(std::variant<persistence::replay_result, service_error>)> done) = 0;

  /// Records a provider's receipt (its channel named in it); answers after COMMIT.
  virtual void record_receipt(
      persistence::receipt_input receipt,
      std::function<void(std::variant<persistence::receipt_outcome, service_error>)> done) = 0;

  /// Admits the seal of a signed push whose signature does not cover the request (WeChat's):
  /// answers after COMMIT whether the push may be acted on — true when the seal is new or names
  /// the same request, on any node sharing the database.
  virtual void admit_push(domain::push_seal seal,
                          std::function<void(std::variant<bool, service_error>)> done) = 0;

  /// This node's view of its cluster (a single node: itself, owning every partition).
  virtual void cluster(std::function<void(domain::cluster_view)> done) = 0;

  /// Task counts per channel and state of the tasks `which` selects, and their messages.
  virtual void
  stats(persistence::stats_query which,
        std::function<void(std::variant<persistence::stats_report, service_error>)> done) = 0;

  /// A page of one user's inbox (the query names the tenant) and their unread count.
  virtual void
  list_inbox(persistence::inbox_query which,
             std::function<void(std::variant<persistence::inbox_page, service_error>)> done) = 0;

  /// The inbox item of `task_id` if it is `tenant`'s (empty: any tenant's).
  virtual void find_inbox_item(
      std::string tenant, std::string task_id,
      std::function<void(std::variant<std::optional<persistence::inbox_item>, service_error>)>
          done) = 0;

  /// Whether `name` names a time zone of the installation's tz database ("Asia/Shanghai").
  virtual bool known_time_zone(const std::string& name) const = 0;

  /// The stored profile of `user_id` of `tenant`; nullopt when none was stored.
  virtual void
  find_user(std::string tenant, std::string user_id,
            std::function<void(std::variant<std::optional<domain::user_profile>, service_error>)>
                done) = 0;

  /// Applies `patch` (already checked) to the user of `tenant`, creating it when absent, stamped
  /// with the service's time; answers the profile as committed.
  virtual void
  update_user(std::string tenant, std::string user_id, domain::user_patch patch,
              std::function<void(std::variant<domain::user_profile, service_error>)> done) = 0;

  /// The stored templates this node renders from (latest versions), as of now: never null.
  virtual std::shared_ptr<const domain::template_catalog> stored_templates() const = 0;

  /// Saves `definition` (already checked) as the next version of the tenant's template;
  /// answers it after COMMIT, and this node renders it from then on.
  virtual void
  save_template(std::string tenant, std::string code, domain::template_definition definition,
                std::function<void(std::variant<domain::stored_template, service_error>)> done) = 0;

  /// The tenant's template: `version`, or the latest live one when 0; nullopt when none.
  virtual void find_template(
      std::string tenant, std::string code, std::uint32_t version,
      std::function<void(std::variant<std::optional<domain::stored_template>, service_error>)>
          done) = 0;

  /// Deletes every version of the tenant's template; answers whether one was live.
  virtual void delete_template(std::string tenant, std::string code,
                               std::function<void(std::variant<bool, service_error>)> done) = 0;

  /// Whether the database answers and the actors run; `reason` says what is not ready.
  virtual void readiness(std::function<void(bool ready, std::string reason)> done) = 0;
};

} // namespace herald::api
