# psched_label_program(LABEL PROGRAM): tests labelled LABEL run PROGRAM, so the target
# tests-LABEL (defined at the end of the top-level CMakeLists.txt) builds it. `make test-tsan`
# builds only the programs of the labels it runs.
function(psched_label_program label program)
  set_property(GLOBAL APPEND PROPERTY PSCHED_TEST_LABELS ${label})
  set_property(GLOBAL APPEND PROPERTY PSCHED_TEST_PROGRAMS_${label} ${program})
endfunction()

# psched_test(NAME SOURCES... LIBS ... [LABELS label]): a GoogleTest binary registered with
# CTest. One label: gtest_discover_tests would split a list and drop the ENVIRONMENT property.
# Unit tests sit beside the code they test (foo.cc, foo_test.cc).
# SERIAL: ctest runs the program's tests alone (RUN_SERIAL), for tests that compare latencies
# measured within themselves and must not run beside other tests' busy threads.
function(psched_test name)
  cmake_parse_arguments(T "SERIAL" "LABELS" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock GTest::gtest_main)
  include(GoogleTest)
  set(properties ENVIRONMENT "PSCHED_SHARED_DIR=${PSCHED_SHARED_DIR}")
  if(T_LABELS)
    list(APPEND properties LABELS "${T_LABELS}")
    psched_label_program(${T_LABELS} ${name})
  endif()
  if(T_SERIAL)
    list(APPEND properties RUN_SERIAL TRUE)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${properties})
endfunction()

# The ../shared folder (models, reference outputs, paper tables) beside the checkout.
if(NOT PSCHED_SHARED_DIR)
  get_filename_component(PSCHED_SHARED_DIR "${CMAKE_SOURCE_DIR}/../shared" ABSOLUTE)
endif()
set(PSCHED_SHARED_DIR "${PSCHED_SHARED_DIR}" CACHE PATH "Folder with models/ and paper-tables/")
