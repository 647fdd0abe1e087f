// parse_database_url: what --db accepts, what SOCI/libpq is given, and what logs may show.
#include "persistence/schema.hpp"
#include "persistence/task_store.hpp"

#include <stdexcept>
#include <string>

#include <boost/test/unit_test.hpp>

using herald::persistence::database_url;
using herald::persistence::parse_database_url;

BOOST_AUTO_TEST_SUITE(database_url_tests)

BOOST_AUTO_TEST_CASE(sqlite_paths_relative_and_absolute) {
  auto relative = parse_database_url("sqlite:var/herald.db");
  BOOST_TEST((relative.backend == database_url::kind::sqlite));
  BOOST_TEST(relative.sqlite_path == "var/herald.db");
  BOOST_TEST(relative.text == "sqlite:var/herald.db");
  BOOST_TEST(parse_database_url("sqlite:/var/lib/herald/h.db").sqlite_path ==
             "/var/lib/herald/h.db");
  BOOST_CHECK_THROW(parse_database_url("sqlite:"), std::invalid_argument);
  BOOST_CHECK_THROW(parse_database_url("sqlite://x.db"), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(postgresql_url_becomes_keyword_value_connection_string) {
  auto url = parse_database_url("postgresql://herald@db.example:6543/notify");
  BOOST_TEST((url.backend == database_url::kind::postgresql));
  BOOST_TEST(url.connection_string ==
             "host='db.example' port='6543' dbname='notify' user='herald'");
  BOOST_TEST(url.text == "postgresql://herald@db.example:6543/notify");

  auto short_form = parse_database_url("postgres://db/notify");
  BOOST_TEST(short_form.connection_string == "host='db' dbname='notify'");

  auto ipv6 = parse_database_url("postgresql://u@[::1]:5432/d?sslmode=require&connect_timeout=5");
  BOOST_TEST(ipv6.connection_string == "host='::1' port='5432' dbname='d' user='u' "
                                       "sslmode='require' connect_timeout='5'");
}

BOOST_AUTO_TEST_CASE(passwords_are_masked_and_escaped) {
  auto url = parse_database_url("postgresql://herald:s%27ecr%5Cet@db:5432/notify");
  BOOST_TEST(url.connection_string ==
             "host='db' port='5432' dbname='notify' user='herald' password='s\\'ecr\\\\et'");
  BOOST_TEST(url.text == "postgresql://herald:***@db:5432/notify");
  BOOST_TEST(url.text.find("ecr") == std::string::npos);

  auto in_query = parse_database_url("postgresql://herald@db/notify?password=hunter2");
  BOOST_TEST(in_query.text.find("hunter2") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(malformed_urls_are_refused_with_a_reason) {
  for (const std::string bad :
       {"postgresql://herald@db:5432", "postgresql://herald@db:5432/",
        "postgresql://herald@:5432/d", "postgresql://h@db:99999/d", "postgresql://h@db:54x/d",
        "postgresql://h@db/d?novalue", "postgresql://h@db/d%zz"}) {
    BOOST_TEST_CONTEXT(bad) {
      BOOST_CHECK_THROW(parse_database_url(bad), std::invalid_argument);
    }
  }
}

BOOST_AUTO_TEST_CASE(unsupported_schemes_name_the_accepted_forms) {
  try {
    parse_database_url("mysql://root:pw@db/x");
    BOOST_FAIL("accepted mysql");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("unsupported database URL 'mysql://root:***@db/x'") == 0u);
    BOOST_TEST(what.find("expected sqlite:PATH or postgresql://user@host:port/db") !=
               std::string::npos);
  }
  BOOST_CHECK_THROW(parse_database_url(""), std::invalid_argument);
  BOOST_CHECK_THROW(parse_database_url("herald.db"), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(migration_files_split_at_semicolons_at_line_ends) {
  auto statements = herald::persistence::split_statements(
      "-- a comment; not a statement\nCREATE TABLE a (x TEXT DEFAULT ';');\n\n"
      "CREATE INDEX i\n  ON a (x);\n-- trailing comment\n");
  BOOST_TEST_REQUIRE(statements.size() == 2u);
  BOOST_TEST(statements[0] == "CREATE TABLE a (x TEXT DEFAULT ';')");
  BOOST_TEST(statements[1] == "CREATE INDEX i\nON a (x)");
}

BOOST_AUTO_TEST_SUITE_END()
