# cmake -DPSCHEDD=BIN -DEMULATOR=CMD -DOUT=FILE -P default_config.cmake: writes what
# `pschedd --print-default-config` prints to FILE. EMULATOR (CMAKE_CROSSCOMPILING_EMULATOR,
# e.g. qemu-aarch64) runs a cross-built pschedd; empty for a native build.
execute_process(COMMAND ${EMULATOR} ${PSCHEDD} --print-default-config
                OUTPUT_FILE ${OUT}.tmp RESULT_VARIABLE result ERROR_VARIABLE error)
if(NOT result EQUAL 0)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "'${EMULATOR} ${PSCHEDD} --print-default-config' failed (${result}): "
                      "${error} (a cross build needs CMAKE_CROSSCOMPILING_EMULATOR)")
endif()
file(RENAME ${OUT}.tmp ${OUT})
