# The CUDA platform's part of libkctx (included by the top-level
# CMakeLists.txt after the kctx target; cmake/CudaPlatform.cmake decided
# whether it is built). The adapter sees cuda.h for types only: the driver
# is loaded at run time (no libcuda at link time, no NEEDED entry).
if(KCTX_CUDA_BUILT)
  target_sources(kctx PRIVATE ${CMAKE_BINARY_DIR}/kctx_rt_cuda_blob.c)
  set_source_files_properties(platform/cuda/adapter.c PROPERTIES
    INCLUDE_DIRECTORIES "${KCTX_CUDA_INCLUDE_DIR}")
  target_link_libraries(kctx PRIVATE ${CMAKE_DL_LIBS})
else()
  # kctx_cuda_driver_calls (kctx/cuda.h) exists in every build.
  target_sources(kctx PRIVATE platform/cuda/not_built.c)
endif()
