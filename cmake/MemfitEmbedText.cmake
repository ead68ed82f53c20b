# memfit_embed_text(FILES TEMPLATE OUTPUT VARIABLE DELIMITER): writes OUTPUT
# from TEMPLATE (configure_file, @ONLY) with ${VARIABLE} set to the text of
# FILES (one path, or a list whose texts are concatenated in order), which
# TEMPLATE puts in a raw string literal R"DELIMITER(...)DELIMITER". Fails
# when the text holds the closing delimiter; reconfigures when a file
# changes.
function(memfit_embed_text files template output variable delimiter)
  set(text "")
  foreach(file ${files})
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
    file(READ ${file} part)
    string(APPEND text "${part}")
  endforeach()
  string(FIND "${text}" ")${delimiter}\"" position)
  if(NOT position EQUAL -1)
    message(FATAL_ERROR
      "${files} contain the raw string delimiter ')${delimiter}\"' of ${template}")
  endif()
  set(${variable} "${text}")
  configure_file(${template} ${output} @ONLY)
endfunction()
