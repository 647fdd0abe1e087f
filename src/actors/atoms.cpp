#include "actors/atoms.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/message.hpp>

namespace herald::actors {

namespace {

constexpr caf::atom_value herald_category = caf::atom("herald");

std::string_view name_of(errc code) {
  switch (code) {
  case errc::store_unavailable:
    return "store_unavailable";
  case errc::overloaded:
    return "overloaded";
  case errc::shutting_down:
    return "shutting_down";
  }
  return "unknown";
}

} // namespace

caf::error make_error(errc code, std::string context) {
  return caf::error{static_cast<std::uint8_t>(code), herald_category,
                    caf::make_message(std::move(context))};
}

std::string describe(const caf::error& err) {
  if (err.category() == herald_category && err.context().match_elements<std::string>()) {
    auto text = std::string{name_of(static_cast<errc>(err.code()))};
    return text + ": " + err.context().get_as<std::string>(0);
  }
  return caf::to_string(err);
}

void register_types(caf::actor_system_config& cfg) {
  cfg.add_error_category(herald_category,
                         [](std::uint8_t code, caf::atom_value, const caf::message& context) {
                           auto text = std::string{name_of(static_cast<errc>(code))};
                           if (context.match_elements<std::string>())
                             text += ": " + context.get_as<std::string>(0);
                           return text;
                         });
}

} // namespace herald::actors
