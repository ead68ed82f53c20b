# memfit_embed_text(FILE TEMPLATE OUTPUT VARIABLE DELIMITER): writes OUTPUT
# from TEMPLATE (configure_file, @ONLY) with ${VARIABLE} set to FILE's text,
# which TEMPLATE puts in a raw string literal R"DELIMITER(...)DELIMITER".
# Fails when the text holds the closing delimiter; reconfigures when FILE
# changes.
function(memfit_embed_text file template output variable delimiter)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
  file(READ ${file} text)
  string(FIND "${text}" ")${delimiter}\"" position)
  if(NOT position EQUAL -1)
    message(FATAL_ERROR
      "${file} contains the raw string delimiter ')${delimiter}\"' of ${template}")
  endif()
  set(${variable} "${text}")
  configure_file(${template} ${output} @ONLY)
endfunction()
