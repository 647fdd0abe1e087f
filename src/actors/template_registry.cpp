#include "actors/template_registry.hpp"

#include "actors/logging_handlers.hpp"
#include "domain/masking.hpp"
#include "observability/log.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

namespace {

caf::error unavailable(const std::exception& e) {
  return caf::make_error(errc::store_unavailable, domain::mask_free_text(e.what()));
}

std::shared_ptr<const domain::template_catalog>
catalog_of(std::vector<domain::stored_template> latest) {
  auto catalog = std::make_shared<domain::template_catalog>();
  for (auto& stored : latest)
    catalog->put(std::move(stored));
  return catalog;
}

} // namespace

published_templates::published_templates()
    : catalog_(std::make_shared<const domain::template_catalog>()) {}

std::shared_ptr<const domain::template_catalog> published_templates::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return catalog_;
}

void published_templates::publish(std::shared_ptr<const domain::template_catalog> catalog) {
  std::lock_guard<std::mutex> lock(mutex_);
  catalog_ = std::move(catalog);
}

std::string template_registry_config::validate() const {
  if (refresh_interval.count() <= 0)
    return "stored_templates.refresh_ms: must be a positive number of milliseconds";
  return {};
}

void load_published_templates(persistence::template_store& store, published_templates& published) {
  published.publish(catalog_of(store.load_latest()));
}

template_registry_actor::behavior_type
template_registry(template_registry_actor::stateful_pointer<template_registry_state> self,
                  std::shared_ptr<persistence::template_store> store,
                  std::shared_ptr<published_templates> published, template_registry_config config) {
  install_logging_handlers(self);
  self->state.store = std::move(store);
  self->state.published = std::move(published);
  self->state.config = config;
  self->send(self, refresh_atom_v);
  // The registry is one actor: a save, a deletion and a refresh never interleave, so a refresh
  // cannot publish a catalog older than a save this node already answered.
  return {
      [self](put_atom, const std::string& tenant, const std::string& code,
             const domain::template_definition& definition,
             domain::timestamp now) -> caf::result<domain::stored_template> {
        auto& st = self->state;
        try {
          auto stored = st.store->save(tenant, code, definition, now);
          auto next = std::make_shared<domain::template_catalog>(*st.published->current());
          next->put(stored);
          st.published->publish(std::move(next));
          return stored;
        } catch (const std::exception& e) {
          return unavailable(e);
        }
      },
      [self](template_atom, const std::string& tenant, const std::string& code,
             std::uint32_t version) -> caf::result<maybe_stored_template> {
        try {
          return self->state.store->find(tenant, code,
                                         version == 0 ? std::nullopt : std::optional(version));
        } catch (const std::exception& e) {
          return unavailable(e);
        }
      },
      [self](delete_atom, const std::string& tenant, const std::string& code,
             domain::timestamp now) -> caf::result<bool> {
        auto& st = self->state;
        try {
          const bool removed = st.store->remove(tenant, code, now);
          if (removed) {
            auto next = std::make_shared<domain::template_catalog>(*st.published->current());
            next->erase(tenant, code);
            st.published->publish(std::move(next));
          }
          return removed;
        } catch (const std::exception& e) {
          return unavailable(e);
        }
      },
      [self](refresh_atom) {
        auto& st = self->state;
        try {
          auto revision = st.store->revision();
          if (revision != st.revision) {
            st.published->publish(catalog_of(st.store->load_latest()));
            st.revision = std::move(revision);
          }
        } catch (const std::exception& e) {
          // The catalog in use stays; the next refresh tries again.
          log::warn("herald.templates_refresh_failed",
                    {{"error", domain::mask_free_text(e.what())}});
        }
        self->delayed_send(self, st.config.refresh_interval, refresh_atom_v);
      },
  };
}

} // namespace herald::actors
