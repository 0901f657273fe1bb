# Fails when an SDK header includes anything but the C standard library and
# other SDK headers: a plugin must build from sdk/include alone.
# anvil/formats/ holds the layouts of published third-party formats.
file(GLOB_RECURSE headers "${SDK_DIR}/anvil/*.h")
file(GLOB_RECURSE sdk_names RELATIVE "${SDK_DIR}" "${SDK_DIR}/anvil/*.h")
set(std_headers stddef.h stdint.h string.h math.h)
foreach(h ${headers})
  file(STRINGS "${h}" lines REGEX "^[ \t]*#[ \t]*include")
  foreach(l ${lines})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*" "\\1" inc "${l}")
    list(FIND sdk_names "${inc}" in_sdk)
    list(FIND std_headers "${inc}" in_std)
    if(in_sdk EQUAL -1 AND in_std EQUAL -1)
      message(FATAL_ERROR "${h} includes '${inc}', which is neither an SDK header nor an allowed C header")
    endif()
  endforeach()
endforeach()
list(LENGTH headers n)
message(STATUS "${n} SDK headers include only SDK and C standard headers")
