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
  set_property(GLOBAL APPEND PROPERTY PMINDEX_TEST_PROGRAMS ${T_NAME})
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

# pmindex_add_test_index(NAME lib SOURCES a.cc...)
# A test-only index in a folder of its own under tests/ (tests/sample_index/ is one): an
# OBJECT library, so its objects, and the static initializer that registers it, are in every
# program that links it. pmindex_link_test_indexes() links it into every test program, so the
# registry-driven suites run it with no edit outside its folder.
function(pmindex_add_test_index)
  cmake_parse_arguments(T "" "NAME" "SOURCES" ${ARGN})
  add_library(${T_NAME} OBJECT ${T_SOURCES})
  target_include_directories(${T_NAME} PUBLIC ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${T_NAME} PUBLIC pmindex_internal)
  set_property(GLOBAL APPEND PROPERTY PMINDEX_TEST_INDEXES ${T_NAME})
endfunction()

# Links every test-only index into every test program (call once, after both are defined).
function(pmindex_link_test_indexes)
  get_property(indexes GLOBAL PROPERTY PMINDEX_TEST_INDEXES)
  get_property(programs GLOBAL PROPERTY PMINDEX_TEST_PROGRAMS)
  foreach(program ${programs})
    target_link_libraries(${program} PRIVATE ${indexes})
  endforeach()
endfunction()
