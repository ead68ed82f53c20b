# memfit_add_pch_target() and memfit_precompile_headers(LIBRARY): the MLIR
# and LLVM headers that every compiler source includes, and the memfit
# dialect's ops, precompiled once for the whole build instead of parsed again
# by each file. A source of this project spends most of its compile time in
# those headers (a 200-line pass takes as long as a -fsyntax-only run of it),
# and the libraries are split into many small files. MemfitPch, an object
# library of one empty file compiled with the flags of an MLIR library, builds
# the precompiled header (about 40 s); every library that asks reuses that
# artifact (REUSE_FROM) instead of building one of its own. Off with
# -DMEMFIT_PCH=OFF; a file that cannot use the precompiled header (other
# flags) is parsed as before.
option(MEMFIT_PCH "Precompile the common MLIR headers once" ON)

set(MEMFIT_PCH_HEADERS
  <llvm/ADT/DenseMap.h>
  <llvm/ADT/STLExtras.h>
  <llvm/ADT/SmallVector.h>
  <llvm/ADT/StringRef.h>
  <llvm/Support/raw_ostream.h>
  <mlir/Dialect/Func/IR/FuncOps.h>
  <mlir/IR/Builders.h>
  <mlir/IR/BuiltinAttributes.h>
  <mlir/IR/BuiltinOps.h>
  <mlir/IR/BuiltinTypes.h>
  <mlir/IR/Diagnostics.h>
  <mlir/IR/OpDefinition.h>
  <mlir/IR/PatternMatch.h>
  <mlir/Pass/Pass.h>
  ${PROJECT_SOURCE_DIR}/include/memfit/Dialect/MemfitOps.h
)

# After include/memfit (the dialect's generated headers).
function(memfit_add_pch_target)
  if(NOT MEMFIT_PCH)
    return()
  endif()
  set(source ${PROJECT_BINARY_DIR}/MemfitPch.cpp)
  file(CONFIGURE OUTPUT ${source}
       CONTENT "// The precompiled header's own translation unit.\n")
  add_library(MemfitPch OBJECT ${source})
  llvm_update_compile_flags(MemfitPch)
  set_target_properties(MemfitPch PROPERTIES POSITION_INDEPENDENT_CODE ON)
  add_dependencies(MemfitPch MLIRMemfitOpsIncGen MLIRMemfitInterfacesIncGen)
  target_precompile_headers(MemfitPch PRIVATE ${MEMFIT_PCH_HEADERS})
endfunction()

function(memfit_precompile_headers library)
  if(MEMFIT_PCH AND TARGET obj.${library})
    target_precompile_headers(obj.${library} REUSE_FROM MemfitPch)
  endif()
endfunction()
