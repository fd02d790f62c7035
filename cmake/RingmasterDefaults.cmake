# Warnings and sanitizers, applied the same way to every target of ours.

if(RINGMASTER_SANITIZE)
  # Whole-build flags: a sanitizer must see every object it links with.
  set(_rm_san "-fsanitize=${RINGMASTER_SANITIZE}" -fno-omit-frame-pointer)
  if(RINGMASTER_SANITIZE MATCHES "undefined")
    list(APPEND _rm_san -fno-sanitize-recover=all)
  endif()
  add_compile_options(${_rm_san})
  add_link_options(${_rm_san})
  message(STATUS "Ringmaster: sanitizers ${RINGMASTER_SANITIZE}")
endif()

# Our own targets get warnings; third-party and generated code does not.
function(ringmaster_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)
endfunction()
