# Install rules and the CMake package for C++ API users:
#   cmake --install build --prefix DIR
# installs the tools, the public headers, the libraries and
# DIR/lib/cmake/memfit/memfitConfig.cmake, so that another project writes
#   find_package(memfit CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE memfit::JIT memfit::Runtime)
# The libraries are static: a consumer links MLIR, ONNX's protobuf classes,
# GLPK and OpenBLAS too. memfitConfig.cmake finds MLIR, protobuf and ONNX
# as this build did; GLPK and OpenBLAS are named by the absolute paths this
# build found (the same Debian packages on the consumer's machine). In a
# sanitizer build (MEMFIT_SANITIZE) the exported libraries carry the
# -fsanitize link options, so a consumer links the sanitizer runtimes.

include(CMakePackageConfigHelpers)

# Every library the JIT links, with the name it has in the package.
set(MEMFIT_EXPORTED_LIBRARIES
  MemfitRuntime:Runtime
  MemfitSupport:Support
  MemfitDialect:Dialect
  MemfitAnalysis:Analysis
  MemfitImport:Import
  MemfitKernels:Kernels
  MemfitRemat:Remat
  MemfitSummary:Summary
  MemfitTraining:Training
  MemfitPrecision:Precision
  MemfitQuantization:Quantization
  MemfitPipelines:Pipelines
  MemfitTargetCuda:TargetCuda
  MemfitJIT:JIT
  MemfitFrontend:Frontend
)
set(memfit_targets)
foreach(entry ${MEMFIT_EXPORTED_LIBRARIES})
  string(REPLACE ":" ";" pair ${entry})
  list(GET pair 0 target)
  list(GET pair 1 export_name)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
  target_include_directories(${target} INTERFACE $<INSTALL_INTERFACE:include>)
  add_library(memfit::${export_name} ALIAS ${target})
  # The sanitizer build's libraries call into the sanitizer runtimes: a
  # consumer's link needs the same -fsanitize flags (and the same compiler).
  # The build tree has them from add_link_options already.
  foreach(sanitizer ${MEMFIT_SANITIZE})
    target_link_options(${target} INTERFACE
      $<INSTALL_INTERFACE:-fsanitize=${sanitizer}>)
  endforeach()
  list(APPEND memfit_targets ${target})
endforeach()

install(TARGETS ${memfit_targets}
  EXPORT memfitTargets
  ARCHIVE DESTINATION lib
  LIBRARY DESTINATION lib)
install(TARGETS memfit-opt memfit-run memfit-translate memfit-nvrtc
  RUNTIME DESTINATION bin)
install(DIRECTORY include/memfit runtime/include/memfit
  DESTINATION include
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/memfit
  DESTINATION include
  FILES_MATCHING PATTERN "*.inc" PATTERN "CMakeFiles" EXCLUDE)

install(EXPORT memfitTargets
  NAMESPACE memfit::
  DESTINATION lib/cmake/memfit)
configure_package_config_file(cmake/memfitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/memfitConfig.cmake
  INSTALL_DESTINATION lib/cmake/memfit)
install(FILES ${PROJECT_BINARY_DIR}/memfitConfig.cmake
  DESTINATION lib/cmake/memfit)
