#include "actors/logging_handlers.hpp"

#include "actors/atoms.hpp"
#include "domain/masking.hpp"
#include "observability/log.hpp"

#include <caf/message_view.hpp>
#include <caf/sec.hpp>

namespace herald::actors {

void install_logging_handlers(caf::scheduled_actor* self) {
  self->set_default_handler(
      [](caf::scheduled_actor* actor, caf::message_view& msg) -> caf::result<caf::message> {
        // Its atom and size only: the elements may carry a recipient or a message's text.
        const auto& content = msg.content();
        log::warn("actor.unexpected_message",
                  {{"actor", actor->name()},
                   {"atom", content.size() > 0 && content.match_element<caf::atom_value>(0)
                                ? caf::to_string(content.get_as<caf::atom_value>(0))
                                : std::string{}},
                   {"elements", std::to_string(content.size())}});
        return caf::sec::unexpected_message;
      });
  self->set_error_handler([](caf::scheduled_actor* actor, caf::error& err) {
    log::error("actor.unhandled_error", {{"actor", actor->name()}, {"error", describe(err)}});
  });
  self->set_exception_handler(
      [](caf::scheduled_actor* actor, std::exception_ptr& eptr) -> caf::error {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(eptr);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        // In CAF 0.17 the actor dies anyway; its supervisor restarts it from the database.
        log::error("actor.exception",
                   {{"actor", actor->name()}, {"error", domain::mask_free_text(what)}});
        return caf::make_error(caf::sec::runtime_error, std::move(what));
      });
}

} // namespace herald::actors
