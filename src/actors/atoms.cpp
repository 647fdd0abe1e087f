#include "actors/atoms.hpp"

#include "actors/cluster_messages.hpp"
#include "domain/masking.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/message.hpp>

namespace herald::actors {

namespace {

constexpr caf::atom_value herald_category = caf::detail::error_factory<errc>::category;

std::string_view name_of(errc code) {
  switch (code) {
  case errc::store_unavailable:
    return "store_unavailable";
  case errc::overloaded:
    return "overloaded";
  }
  return "unknown";
}

} // namespace

bool has_code(const caf::error& err, errc code) {
  return err.category() == herald_category && err.code() == static_cast<std::uint8_t>(code);
}

std::string describe(const caf::error& err) {
  if (err.category() == herald_category && err.context().match_elements<std::string>()) {
    auto text = std::string{name_of(static_cast<errc>(err.code()))};
    return domain::mask_free_text(text + ": " + err.context().get_as<std::string>(0));
  }
  return domain::mask_free_text(caf::to_string(err));
}

void register_types(caf::actor_system_config& cfg) {
  // Every value type of the type-id block (message_types.hpp), by its type name.
  cfg.add_message_types<caf::id_block::herald>();
  // What travels between cluster nodes, by the names their inspect() overloads give.
  cfg.add_message_type<member_beat>(member_beat_type_name);
  cfg.add_message_type<task_handoff>(task_handoff_type_name);
  cfg.add_error_category(herald_category,
                         [](std::uint8_t code, caf::atom_value, const caf::message& context) {
                           auto text = std::string{name_of(static_cast<errc>(code))};
                           if (context.match_elements<std::string>())
                             text += ": " + context.get_as<std::string>(0);
                           return text;
                         });
}

} // namespace herald::actors
