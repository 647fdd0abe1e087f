#include "observability/health_board.hpp"

#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_SUITE(health_board_tests)

BOOST_AUTO_TEST_CASE(names_every_standing_problem_in_name_order) {
  herald::health_board board;
  BOOST_TEST(board.problems() == "");
  board.report("store_writer", "down");
  board.report("channel sms", "results cannot be recorded");
  BOOST_TEST(board.problems() == "channel sms: results cannot be recorded; store_writer: down");
}

BOOST_AUTO_TEST_CASE(a_new_report_replaces_the_reason_and_clear_removes_it) {
  herald::health_board board;
  board.report("dispatcher", "restarting");
  board.report("dispatcher", "gave up after 5 restarts in 60 s");
  BOOST_TEST(board.problems() == "dispatcher: gave up after 5 restarts in 60 s");
  board.clear("dispatcher");
  board.clear("never reported");
  BOOST_TEST(board.problems() == "");
}

BOOST_AUTO_TEST_SUITE_END()
