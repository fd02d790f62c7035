# Finds the CUDA runtime and NCCL for the NCCL backend.
#
# Looked for, in order: CUDA_HOME / NCCL_HOME, the usual toolkit and system
# locations (a user's CUDA image), and NVIDIA's PyPI wheels that scripts/setup
# unpacks under ~/.cache/ringmaster/cuda-wheels/current (how CI compiles and
# links the backend on a machine without a GPU).
#
# RINGMASTER_WITH_NCCL: AUTO (default: on when found), ON (error if not
# found), OFF. Sets RINGMASTER_HAVE_NCCL and the imported targets
# Ringmaster::cudart and Ringmaster::nccl.
#
# With the backend, NVRTC (libnvrtc + nvrtc.h: a toolkit's, or the
# nvidia-cuda-nvrtc-cu12 wheel's) compiles the agent's own kernels at build
# time (ringmaster_nvrtc_embed below); RINGMASTER_HAVE_NVRTC says whether it was
# found. Without it the build still succeeds and the agent does without them.
# -DRINGMASTER_NVRTC_LIBRARY=OFF leaves NVRTC out on purpose.

set(RINGMASTER_WITH_NCCL AUTO CACHE STRING "Build the NCCL/CUDA backend: AUTO | ON | OFF")
set_property(CACHE RINGMASTER_WITH_NCCL PROPERTY STRINGS AUTO ON OFF)
set(RINGMASTER_CUDA_WHEELS "$ENV{HOME}/.cache/ringmaster/cuda-wheels/current" CACHE PATH
    "Unpacked NVIDIA wheels (scripts/setup)")
set(RINGMASTER_HAVE_NCCL FALSE)

if(NOT RINGMASTER_WITH_NCCL STREQUAL "OFF")
  set(_rm_cuda_hints $ENV{CUDA_HOME} $ENV{CUDA_PATH} /usr/local/cuda ${RINGMASTER_CUDA_WHEELS}/nvidia/cuda_runtime)
  set(_rm_nccl_hints $ENV{NCCL_HOME} $ENV{CUDA_HOME} /usr/local/cuda ${RINGMASTER_CUDA_WHEELS}/nvidia/nccl)
  find_path(RINGMASTER_CUDART_INCLUDE_DIR cuda_runtime_api.h HINTS ${_rm_cuda_hints} PATH_SUFFIXES include)
  # Wheels ship only versioned sonames (libcudart.so.12, libnccl.so.2).
  find_library(RINGMASTER_CUDART_LIBRARY NAMES cudart libcudart.so.13 libcudart.so.12
               HINTS ${_rm_cuda_hints} PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu)
  # A toolkit keeps crt/ beside cuda_runtime_api.h; the wheels put it in nvcc's.
  find_path(RINGMASTER_CUDA_CRT_INCLUDE_DIR crt/host_defines.h
            HINTS ${_rm_cuda_hints} ${RINGMASTER_CUDA_WHEELS}/nvidia/cuda_nvcc PATH_SUFFIXES include)
  find_path(RINGMASTER_CUDA_CCCL_INCLUDE_DIR nv/target
            HINTS ${_rm_cuda_hints} ${RINGMASTER_CUDA_WHEELS}/nvidia/cuda_cccl PATH_SUFFIXES include)
  find_path(RINGMASTER_NCCL_INCLUDE_DIR nccl.h HINTS ${_rm_nccl_hints} PATH_SUFFIXES include)
  find_library(RINGMASTER_NCCL_LIBRARY NAMES nccl libnccl.so.2
               HINTS ${_rm_nccl_hints} PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu)

  if(RINGMASTER_CUDART_INCLUDE_DIR AND RINGMASTER_CUDA_CRT_INCLUDE_DIR AND RINGMASTER_CUDA_CCCL_INCLUDE_DIR
     AND RINGMASTER_CUDART_LIBRARY
     AND RINGMASTER_NCCL_INCLUDE_DIR AND RINGMASTER_NCCL_LIBRARY)
    set(RINGMASTER_HAVE_NCCL TRUE)
    file(STRINGS ${RINGMASTER_NCCL_INCLUDE_DIR}/nccl.h _rm_nccl_ver REGEX "#define NCCL_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*" "\\1.\\2.\\3"
           RINGMASTER_NCCL_VERSION "${_rm_nccl_ver}")
    foreach(_rm_lib cudart nccl)
      string(TOUPPER ${_rm_lib} _rm_up)
      add_library(Ringmaster::${_rm_lib} SHARED IMPORTED)
      set_target_properties(Ringmaster::${_rm_lib} PROPERTIES
        IMPORTED_LOCATION ${RINGMASTER_${_rm_up}_LIBRARY}
        INTERFACE_INCLUDE_DIRECTORIES ${RINGMASTER_${_rm_up}_INCLUDE_DIR})
    endforeach()
    set_property(TARGET Ringmaster::cudart APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES
                 ${RINGMASTER_CUDA_CRT_INCLUDE_DIR} ${RINGMASTER_CUDA_CCCL_INCLUDE_DIR})
    # nccl.h includes the runtime's headers.
    set_property(TARGET Ringmaster::nccl APPEND PROPERTY INTERFACE_LINK_LIBRARIES Ringmaster::cudart)
    message(STATUS "Ringmaster: NCCL backend ON: NCCL ${RINGMASTER_NCCL_VERSION} (${RINGMASTER_NCCL_LIBRARY}), "
                   "CUDA runtime ${RINGMASTER_CUDART_LIBRARY}")
  elseif(RINGMASTER_WITH_NCCL STREQUAL "ON")
    message(FATAL_ERROR "Ringmaster: RINGMASTER_WITH_NCCL=ON but the CUDA runtime or NCCL was not found "
                        "(cuda_runtime_api.h: ${RINGMASTER_CUDART_INCLUDE_DIR}, "
                        "crt/host_defines.h: ${RINGMASTER_CUDA_CRT_INCLUDE_DIR}, "
                        "nv/target: ${RINGMASTER_CUDA_CCCL_INCLUDE_DIR}, libcudart: ${RINGMASTER_CUDART_LIBRARY}, "
                        "nccl.h: ${RINGMASTER_NCCL_INCLUDE_DIR}, libnccl: ${RINGMASTER_NCCL_LIBRARY}). "
                        "Run scripts/setup, or set CUDA_HOME / NCCL_HOME.")
  else()
    message(STATUS "Ringmaster: NCCL backend OFF: the CUDA runtime or NCCL was not found "
                   "(run scripts/setup, or set CUDA_HOME / NCCL_HOME)")
  endif()
endif()

# NVRTC, for the agent's kernels (agent/src/gpu/kernels/): optional.
set(RINGMASTER_HAVE_NVRTC FALSE)
set(RINGMASTER_KERNEL_PTX compute_80 CACHE STRING
    "The PTX embedded for the agent's kernels (JIT-compiled by the driver on newer GPUs)")
set(RINGMASTER_KERNEL_CUBINS sm_80 sm_90 CACHE STRING "The cubins embedded for the agent's kernels")
if(RINGMASTER_HAVE_NCCL)
  set(_rm_nvrtc_hints $ENV{CUDA_HOME} $ENV{CUDA_PATH} /usr/local/cuda ${RINGMASTER_CUDA_WHEELS}/nvidia/cuda_nvrtc)
  find_path(RINGMASTER_NVRTC_INCLUDE_DIR nvrtc.h HINTS ${_rm_nvrtc_hints} PATH_SUFFIXES include)
  find_library(RINGMASTER_NVRTC_LIBRARY NAMES nvrtc libnvrtc.so.13 libnvrtc.so.12
               HINTS ${_rm_nvrtc_hints} PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu)
  if(RINGMASTER_NVRTC_INCLUDE_DIR AND RINGMASTER_NVRTC_LIBRARY AND EXISTS "${RINGMASTER_NVRTC_LIBRARY}")
    set(RINGMASTER_HAVE_NVRTC TRUE)
    string(REPLACE ";" " " _rm_ptx "${RINGMASTER_KERNEL_PTX}")
    string(REPLACE ";" " " _rm_cubins "${RINGMASTER_KERNEL_CUBINS}")
    message(STATUS "Ringmaster: batched copy kernel ON: NVRTC ${RINGMASTER_NVRTC_LIBRARY} makes "
                   "PTX ${_rm_ptx} and cubins ${_rm_cubins} at build time")
  else()
    message(STATUS "Ringmaster: batched copy kernel OFF: NVRTC was not found (run scripts/setup, or set "
                   "CUDA_HOME); device packs use one cudaMemcpyAsync per tensor")
  endif()
endif()

# ringmaster_nvrtc_embed(<out_var> SOURCE <file.cu> FUNCTION <name> [DEPENDS <headers>...])
# Compiles SOURCE with NVRTC at build time (the program rm-nvrtc-embed,
# tools/nvrtc-embed) into RINGMASTER_KERNEL_PTX and RINGMASTER_KERNEL_CUBINS,
# and sets <out_var> to a generated .cc defining ringmaster::internal::<name>()
# and <name>Origin() (agent/src/gpu/kernels/embedded_image.h). Include root:
# agent/src.
function(ringmaster_nvrtc_embed out_var)
  cmake_parse_arguments(PARSE_ARGV 1 _rm "" "SOURCE;FUNCTION" "DEPENDS")
  if(NOT TARGET rm-nvrtc-embed)
    add_executable(rm-nvrtc-embed ${PROJECT_SOURCE_DIR}/tools/nvrtc-embed/nvrtc_embed.cc)
    target_include_directories(rm-nvrtc-embed SYSTEM PRIVATE ${RINGMASTER_NVRTC_INCLUDE_DIR})
    target_link_libraries(rm-nvrtc-embed PRIVATE ${CMAKE_DL_LIBS})
    # A build-time program: no sanitizer (NVRTC, uninstrumented, would trip them).
    target_compile_options(rm-nvrtc-embed PRIVATE -fno-sanitize=all)
    target_link_options(rm-nvrtc-embed PRIVATE -fno-sanitize=all)
    ringmaster_target_defaults(rm-nvrtc-embed)
  endif()
  get_filename_component(_rm_name ${_rm_SOURCE} NAME_WE)
  set(_rm_out ${CMAKE_CURRENT_BINARY_DIR}/generated/${_rm_name}_images.cc)
  set(_rm_args)
  foreach(_rm_a ${RINGMASTER_KERNEL_PTX})
    list(APPEND _rm_args --ptx ${_rm_a})
  endforeach()
  foreach(_rm_a ${RINGMASTER_KERNEL_CUBINS})
    list(APPEND _rm_args --cubin ${_rm_a})
  endforeach()
  add_custom_command(OUTPUT ${_rm_out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/generated
    COMMAND rm-nvrtc-embed --nvrtc ${RINGMASTER_NVRTC_LIBRARY} --source ${_rm_SOURCE}
            --include ${PROJECT_SOURCE_DIR}/agent/src ${_rm_args} --function ${_rm_FUNCTION} --output ${_rm_out}
    DEPENDS rm-nvrtc-embed ${_rm_SOURCE} ${_rm_DEPENDS}
    COMMENT "NVRTC: ${_rm_name} -> ${RINGMASTER_KERNEL_PTX} ${RINGMASTER_KERNEL_CUBINS}"
    VERBATIM)
  set(${out_var} ${_rm_out} PARENT_SCOPE)
endfunction()
