# Boosted-tree dynamics (issue 12). Included from tests/CMakeLists.txt.

# Core: the measures and rules on hand-built ensembles, standard library only (and under
# ASan + UBSan with the other core tests' flags when those are built).
set(GRADSCOPE_TREE_CORE_TESTS
  ${CMAKE_CURRENT_LIST_DIR}/../core/tree_dynamics_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../core/tree_rules_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../core/tree_interactions_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../core/tree_overfit_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../core/tree_interaction_cv_test.cpp
)
add_executable(tree_core_tests ${GRADSCOPE_TREE_CORE_TESTS})
target_link_libraries(tree_core_tests PRIVATE gradscope_core GTest::gtest_main GTest::gmock)
target_compile_options(tree_core_tests PRIVATE ${GRADSCOPE_WARNINGS})
gtest_discover_tests(tree_core_tests TEST_PREFIX "core." DISCOVERY_TIMEOUT 60)
if(GRADSCOPE_SANITIZE_TESTS)
  add_executable(tree_core_tests_san ${GRADSCOPE_TREE_CORE_TESTS})
  target_link_libraries(tree_core_tests_san PRIVATE gradscope_core_san GTest::gtest_main
    GTest::gmock)
  target_compile_options(tree_core_tests_san PRIVATE ${SAN_FLAGS} -O1)
  add_test(NAME core.tree_tests.asan_ubsan COMMAND tree_core_tests_san)
  set_tests_properties(core.tree_tests.asan_ubsan PROPERTIES
    ENVIRONMENT
    "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endif()

# Live: planted faults and healthy controls trained with XGBoost (libxgboost-dev) on the
# scikit-learn data sets, judged against XGBoost's own predictions and importance; and the
# LightGBM and CatBoost fixture models' rounds against their prefix predictions (the tests
# call XGBoosterFeatureScore themselves, so they link XGBoost too).
find_package(xgboost REQUIRED)
add_executable(tree_dynamics_live_tests
  ${CMAKE_CURRENT_LIST_DIR}/dynamics_faults_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dynamics_controls_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dynamics_fixtures_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/overfit_calibration_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/interaction_live_test.cpp
)
target_link_libraries(tree_dynamics_live_tests PRIVATE gradscope_xgboost xgboost::xgboost
  nlohmann_json::nlohmann_json GTest::gtest_main GTest::gmock)
target_compile_options(tree_dynamics_live_tests PRIVATE ${GRADSCOPE_WARNINGS})
target_compile_definitions(tree_dynamics_live_tests PRIVATE
  GRADSCOPE_DEFAULT_DATA_DIR="${PROJECT_SOURCE_DIR}/data"
  GRADSCOPE_TREE_FIXTURE_DIR="${PROJECT_SOURCE_DIR}/tests/data/trees")
gtest_discover_tests(tree_dynamics_live_tests TEST_PREFIX "trees." DISCOVERY_TIMEOUT 60
  PROPERTIES TIMEOUT 600)

# A tree run on disk (run.db records and trees.json; the codec is internal to io) and rendered.
add_executable(tree_io_tests ${CMAKE_CURRENT_LIST_DIR}/../io/tree_store_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../io/tree_render_test.cpp)
target_include_directories(tree_io_tests PRIVATE ${PROJECT_SOURCE_DIR}/src/io)
target_link_libraries(tree_io_tests PRIVATE gradscope_io nlohmann_json::nlohmann_json
  GTest::gtest_main GTest::gmock)
target_compile_options(tree_io_tests PRIVATE ${GRADSCOPE_WARNINGS})
gtest_discover_tests(tree_io_tests TEST_PREFIX "io." DISCOVERY_TIMEOUT 60)

# The gradscope trees command and the run commands on tree runs (the CLI needs LibTorch for
# its demo, so this exists where the CLI does). Models are trained once with XGBoost.
if(GRADSCOPE_BUILD_TORCH)
  add_executable(trees_cli_tests ${CMAKE_CURRENT_LIST_DIR}/../cli/trees_cli_test.cpp)
  target_link_libraries(trees_cli_tests PRIVATE gradscope_xgboost nlohmann_json::nlohmann_json
    GTest::gtest_main GTest::gmock)
  target_compile_options(trees_cli_tests PRIVATE ${GRADSCOPE_WARNINGS})
  target_compile_definitions(trees_cli_tests PRIVATE
    GRADSCOPE_CLI="$<TARGET_FILE:gradscope>"
    GRADSCOPE_DEFAULT_DATA_DIR="${PROJECT_SOURCE_DIR}/data")
  add_dependencies(trees_cli_tests gradscope)
  gtest_discover_tests(trees_cli_tests TEST_PREFIX "cli." DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT 300)
endif()
