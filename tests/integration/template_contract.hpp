#pragma once

// What the templates table (migration 0010) and the template columns of messages and tasks must
// do on every backend, written once and expanded by HERALD_TEMPLATE_CONTRACT() into a SQLite and
// a PostgreSQL suite.

#include "persistence/template_store.hpp"
#include "task_store_contract.hpp"

#include <memory>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

namespace herald::test::template_contract {

using task_store_contract::make_plan;
using task_store_contract::micros;

constexpr std::int64_t t_saved = 1'790'000'200'000'000;

inline domain::template_definition otp(const std::string& body) {
  domain::template_definition d;
  d.default_locale = "en";
  d.locales["en"] = domain::locale_text{"Code", body, {}};
  d.locales["en"].channels["sms"] = domain::channel_text{std::nullopt, std::string("SMS ${code}")};
  d.locales["zh-CN"] = domain::locale_text{"验证码", "验证码 ${code}，“引号” \\ ünïcode", {}};
  d.variables = std::vector<std::string>{"code"};
  return d;
}

/// A migrated database, then a template store on it.
inline std::unique_ptr<persistence::template_store> open_templates(store_backend& backend) {
  backend.open_store(); // migrates
  return std::make_unique<persistence::template_store>(backend.url());
}

// Versions count 1, 2, 3 per tenant and code; a definition reads back as saved.
inline void versions_count_up_per_tenant_and_code(store_backend& backend) {
  auto store = open_templates(backend);
  BOOST_TEST(store->save("t1", "otp", otp("v1 ${code}"), micros(t_saved)).version == 1u);
  BOOST_TEST(store->save("t1", "otp", otp("v2 ${code}"), micros(t_saved + 1)).version == 2u);
  BOOST_TEST(store->save("t2", "otp", otp("other ${code}"), micros(t_saved)).version == 1u);
  BOOST_TEST(store->save("t1", "welcome", otp("hi ${code}"), micros(t_saved)).version == 1u);
  auto latest = store->find("t1", "otp");
  BOOST_REQUIRE(latest.has_value());
  BOOST_TEST(latest->version == 2u);
  BOOST_TEST(latest->definition.locales.at("en").body == "v2 ${code}");
  BOOST_TEST(latest->definition.locales.at("zh-CN").body == "验证码 ${code}，“引号” \\ ünïcode");
  BOOST_TEST(*latest->definition.locales.at("en").channels.at("sms").body == "SMS ${code}");
  BOOST_TEST(!latest->definition.locales.at("en").channels.at("sms").title.has_value());
  BOOST_TEST(latest->definition.variables->size() == 1u);
  BOOST_TEST((latest->created_at == micros(t_saved + 1)));
  auto first = store->find("t1", "otp", 1);
  BOOST_REQUIRE(first.has_value());
  BOOST_TEST(first->definition.locales.at("en").body == "v1 ${code}");
  BOOST_TEST(!store->find("t1", "otp", 3).has_value());
  BOOST_TEST(!store->find("t3", "otp").has_value()); // another tenant sees nothing
}

// Deleting hides every version; a later save takes the next number, never an old one.
inline void a_deleted_template_is_gone_and_its_numbers_are_not_reused(store_backend& backend) {
  auto store = open_templates(backend);
  store->save("t1", "otp", otp("v1 ${code}"), micros(t_saved));
  store->save("t1", "otp", otp("v2 ${code}"), micros(t_saved));
  BOOST_TEST(store->remove("t1", "otp", micros(t_saved + 10)));
  BOOST_TEST(!store->remove("t1", "otp", micros(t_saved + 11))); // nothing live any more
  BOOST_TEST(!store->find("t1", "otp").has_value());
  BOOST_TEST(!store->find("t1", "otp", 1).has_value());
  BOOST_TEST(store->save("t1", "otp", otp("v3 ${code}"), micros(t_saved + 20)).version == 3u);
  BOOST_TEST(store->find("t1", "otp")->version == 3u);
}

// The catalog load holds only the latest live version of each template; the revision changes
// with every save and deletion, and not otherwise.
inline void the_catalog_load_holds_latest_live_versions(store_backend& backend) {
  auto store = open_templates(backend);
  const auto empty = store->revision();
  BOOST_TEST(store->load_latest().empty());
  store->save("t1", "otp", otp("v1 ${code}"), micros(t_saved));
  const auto one = store->revision();
  BOOST_TEST(one != empty);
  BOOST_TEST(store->revision() == one);
  store->save("t1", "otp", otp("v2 ${code}"), micros(t_saved + 1));
  store->save("t2", "otp", otp("x ${code}"), micros(t_saved + 2));
  store->save("t2", "gone", otp("y ${code}"), micros(t_saved + 3));
  const auto before_delete = store->revision();
  store->remove("t2", "gone", micros(t_saved + 4));
  BOOST_TEST(store->revision() != before_delete);
  auto latest = store->load_latest();
  BOOST_REQUIRE_EQUAL(latest.size(), 2u);
  domain::template_catalog catalog;
  for (auto& stored : latest)
    catalog.put(std::move(stored));
  BOOST_TEST(catalog.find("t1", "otp")->version == 2u);
  BOOST_TEST(catalog.find("t2", "otp")->version == 1u);
  BOOST_TEST(catalog.find("t2", "gone") == nullptr);
}

// A second node's store sees what the first saved: they share only the database.
inline void another_connection_sees_a_new_version(store_backend& backend) {
  auto first = open_templates(backend);
  persistence::template_store second(backend.url());
  first->save("t1", "otp", otp("v1 ${code}"), micros(t_saved));
  const auto seen = second.revision();
  BOOST_TEST(second.save("t1", "otp", otp("v2 ${code}"), micros(t_saved + 1)).version == 2u);
  BOOST_TEST(first->revision() != seen);
  BOOST_TEST(first->find("t1", "otp")->version == 2u);
}

// The message keeps the version it was rendered with; a task keeps its own text, and a
// delivery (claim, recovery, inbox) sends it; a task without one sends the message's.
inline void messages_record_the_version_and_tasks_their_own_text(store_backend& backend) {
  auto store = backend.open_store();
  auto plan = make_plan("order-t1", {"sms", "inapp"});
  plan.message.template_version = 7;
  plan.tasks[0].own_content = domain::content{"Shipped", "SMS: order-t1"};
  store->claim({plan});
  auto view = store->find_message("default", plan.message.id);
  BOOST_REQUIRE(view.has_value());
  BOOST_REQUIRE(view->message.template_version.has_value());
  BOOST_TEST(*view->message.template_version == 7u);
  BOOST_TEST(view->message.body == "Order order-t1 shipped");
  for (const auto& task : view->tasks) {
    BOOST_TEST(task.own_content.has_value() == (task.channel == "sms"), task.channel);
    if (task.own_content)
      BOOST_TEST(task.own_content->body == "SMS: order-t1");
  }
  auto deliveries = store->load_unfinished("", 10, micros(1'900'000'000'000'000));
  BOOST_REQUIRE_EQUAL(deliveries.size(), 2u);
  for (const auto& d : deliveries)
    BOOST_TEST(d.body == (d.channel == "sms" ? "SMS: order-t1" : "Order order-t1 shipped"),
               d.channel);
  // A config template (or literal content) records no version.
  auto config = make_plan("order-t2", {"sms"});
  store->claim({config});
  BOOST_TEST(!store->find_message("default", config.message.id)->message.template_version);
}

} // namespace herald::test::template_contract

#define HERALD_TEMPLATE_CONTRACT()                                                                 \
  BOOST_AUTO_TEST_CASE(versions_count_up_per_tenant_and_code) {                                    \
    herald::test::template_contract::versions_count_up_per_tenant_and_code(*this);                 \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(a_deleted_template_is_gone_and_its_numbers_are_not_reused) {                \
    herald::test::template_contract::a_deleted_template_is_gone_and_its_numbers_are_not_reused(    \
        *this);                                                                                    \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(the_catalog_load_holds_latest_live_versions) {                              \
    herald::test::template_contract::the_catalog_load_holds_latest_live_versions(*this);           \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(another_connection_sees_a_new_version) {                                    \
    herald::test::template_contract::another_connection_sees_a_new_version(*this);                 \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(messages_record_the_version_and_tasks_their_own_text) {                     \
    herald::test::template_contract::messages_record_the_version_and_tasks_their_own_text(*this);  \
  }
