#pragma once

#include "actors/interfaces.hpp"
#include "domain/template_definition.hpp"
#include "persistence/template_store.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

namespace herald::actors {

/// The catalog the HTTP threads render from, swapped whole by the registry: a reader takes the
/// current snapshot (one shared_ptr copy under a lock) and never sees a half-made update.
class published_templates {
public:
  published_templates();

  /// The catalog as last published; never null.
  std::shared_ptr<const domain::template_catalog> current() const;

  void publish(std::shared_ptr<const domain::template_catalog> catalog);

private:
  mutable std::mutex mutex_;
  std::shared_ptr<const domain::template_catalog> catalog_;
};

/// How often the registry looks for templates another node saved (stored_templates.refresh_ms).
struct template_registry_config {
  std::chrono::milliseconds refresh_interval{1000};

  /// An empty string when valid, else the reason.
  std::string validate() const;
};

/// Serves the templates API on a connection of its own and keeps `published` up to date: after
/// each save or deletion it commits here, and every refresh interval from the database when its
/// revision changed (another node's save). Spawn it detached: template_store calls block.
/// Start-up loads the catalog before the node answers (load_published_templates).
struct template_registry_state {
  static constexpr const char* name = "template_registry";
  std::shared_ptr<persistence::template_store> store;
  std::shared_ptr<published_templates> published;
  template_registry_config config;
  std::string revision; ///< of the catalog last loaded; empty: load at the next refresh
};

template_registry_actor::behavior_type
template_registry(template_registry_actor::stateful_pointer<template_registry_state> self,
                  std::shared_ptr<persistence::template_store> store,
                  std::shared_ptr<published_templates> published, template_registry_config config);

/// Loads every latest template version from `store` into `published`; for start-up, before the
/// HTTP listener opens, so the first request already sees them. Throws store_error.
void load_published_templates(persistence::template_store& store, published_templates& published);

} // namespace herald::actors
