# pmindex_add_test(NAME name SOURCES a.cc b.cc LIBS lib... [LABELS l...] [TIMEOUT s])
# One GoogleTest binary = one ctest test. Label "long" keeps a test out of the default run
# (scripts/test.sh runs `ctest -LE long`); scripts/longtest.sh runs them.
#
# Every test has its own TIMEOUT (600 s unless given), so ctest's --timeout never applies.
# Sanitizer builds run 5-20x slower on the same sizes (tests divide theirs by 4, Scale()):
# there every timeout set through pmindex_test_timeout is PMINDEX_TEST_TIMEOUT_FACTOR times
# longer.
if(PMINDEX_SANITIZE)
  set(PMINDEX_TEST_TIMEOUT_FACTOR 4)
else()
  set(PMINDEX_TEST_TIMEOUT_FACTOR 1)
endif()

# pmindex_test_timeout(<test> <seconds>): the test's TIMEOUT, scaled for sanitizer builds.
# Use it instead of set_tests_properties(... TIMEOUT ...).
function(pmindex_test_timeout test seconds)
  math(EXPR scaled "${seconds} * ${PMINDEX_TEST_TIMEOUT_FACTOR}")
  set_tests_properties(${test} PROPERTIES TIMEOUT ${scaled})
endfunction()

function(pmindex_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} pmindex_testutil GTest::gtest GTest::gtest_main)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  pmindex_test_timeout(${T_NAME} ${T_TIMEOUT})
  if(T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()
