# Included by ctest when it reads a sanitizer build's tests (HERALD_SANITIZE=ON, see
# ../CMakeLists.txt): every test, and every process it starts, runs with UBSan's suppressions of
# tests/sanitizers/ubsan.supp. Prepended to UBSAN_OPTIONS, so options given in the environment
# (another suppressions=, log_path=) still win.
set(ENV{UBSAN_OPTIONS}
  "suppressions=${CMAKE_CURRENT_LIST_DIR}/../tests/sanitizers/ubsan.supp:$ENV{UBSAN_OPTIONS}")
