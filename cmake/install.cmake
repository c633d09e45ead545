# Installs headers, libraries and a CMake package so consumers can write
#   find_package(gradscope REQUIRED)
#   target_link_libraries(app PRIVATE gradscope::core gradscope::torch)
include(CMakePackageConfigHelpers)

set(GRADSCOPE_EXPORTED gradscope_core gradscope_io gradscope_tensorboard)
if(TARGET gradscope_torch)
  list(APPEND GRADSCOPE_EXPORTED gradscope_torch)
endif()
install(TARGETS ${GRADSCOPE_EXPORTED} EXPORT gradscopeTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/gradscope DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/gradscope/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gradscope)
if(TARGET gradscope)
  install(TARGETS gradscope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET gradscope_demo)  # beside gradscope, where `gradscope demo` looks for it
  install(TARGETS gradscope_demo RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(GRADSCOPE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/gradscope)
install(EXPORT gradscopeTargets NAMESPACE gradscope:: DESTINATION ${GRADSCOPE_CMAKE_DIR})
if(TARGET gradscope_torch)
  set(GRADSCOPE_WITH_TORCH ON)
else()
  set(GRADSCOPE_WITH_TORCH OFF)
endif()
configure_package_config_file(cmake/gradscopeConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/gradscopeConfig.cmake
  INSTALL_DESTINATION ${GRADSCOPE_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/gradscopeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/gradscopeConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/gradscopeConfigVersion.cmake
        DESTINATION ${GRADSCOPE_CMAKE_DIR})
