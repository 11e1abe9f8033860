# Finds Apache Arrow's C++ libraries inside the pinned pyarrow wheel (26.0.1, scripts/requirements.txt) and defines
# gspo_arrow, the interface target that gspo_parquet (src/gspo/data/parquet.cpp: parquet datasets), alone, links.
#
# Why the wheel: it already carries libarrow.so.2600 and libparquet.so.2600 with their headers, built for the new
# C++ ABI (std::__cxx11) and needing nothing newer than GLIBCXX_3.4.22; no other Arrow is packaged where we install
# from. Beside LibTorch: their exported symbols share nothing with libtorch*/libc10 but std:: typeinfo (checked with
# nm -D on both wheels). libparquet also exports a static OpenSSL (parquet encryption): nothing gspo links loads
# libcrypto, so none of its symbols can be bound to the wrong copy. Arrow 26's headers need C++20 (std::span,
# std::bit_width): see gspo_parquet in CMakeLists.txt. The wheel has no unversioned libarrow.so: the libraries are linked by full
# path, and the build RPATH names the wheel's directory, as it does for LibTorch's.

if(NOT GSPO_PYTHON)
  message(FATAL_ERROR "gspo: GSPO_PYTHON is not set (the pinned environment's python; scripts/build.sh passes it)")
endif()
execute_process(COMMAND ${GSPO_PYTHON} -c
                "import pyarrow, sys; sys.stdout.write(pyarrow.get_include() + ';' + pyarrow.get_library_dirs()[0])"
                OUTPUT_VARIABLE _gspo_arrow_paths RESULT_VARIABLE _rc ERROR_VARIABLE _gspo_arrow_err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "gspo: pyarrow not importable by ${GSPO_PYTHON} (parquet datasets are read with its Arrow "
                      "libraries); run scripts/setup.sh, which installs the pinned wheel. ${_gspo_arrow_err}")
endif()
list(GET _gspo_arrow_paths 0 GSPO_ARROW_INCLUDE)
list(GET _gspo_arrow_paths 1 GSPO_ARROW_LIBDIR)
foreach(lib arrow parquet)   # header checked: arrow/api.h, parquet/arrow/reader.h
  file(GLOB _gspo_found "${GSPO_ARROW_LIBDIR}/lib${lib}.so.[0-9]*")
  list(FILTER _gspo_found INCLUDE REGEX "/lib${lib}\\.so\\.[0-9]+$")
  set(_gspo_header "${GSPO_ARROW_INCLUDE}/arrow/api.h")
  if(lib STREQUAL "parquet")
    set(_gspo_header "${GSPO_ARROW_INCLUDE}/parquet/arrow/reader.h")
  endif()
  if(NOT _gspo_found OR NOT EXISTS "${_gspo_header}")
    message(FATAL_ERROR "gspo: no lib${lib}.so.N in ${GSPO_ARROW_LIBDIR} or no ${_gspo_header} (the pyarrow wheel)")
  endif()
  list(GET _gspo_found 0 GSPO_${lib}_LIBRARY)
endforeach()

add_library(gspo_arrow INTERFACE)
target_include_directories(gspo_arrow SYSTEM INTERFACE ${GSPO_ARROW_INCLUDE})
target_link_libraries(gspo_arrow INTERFACE ${GSPO_parquet_LIBRARY} ${GSPO_arrow_LIBRARY})
message(STATUS "gspo: Arrow from the pyarrow wheel: ${GSPO_parquet_LIBRARY}, ${GSPO_arrow_LIBRARY}")
