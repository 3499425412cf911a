# SPDX-License-Identifier: Apache-2.0
# The Python interpreter of the tests: the project's virtual environment .venv/ (made by
# scripts/install-deps.sh, where every Python module the suite needs is importable) when it exists,
# else the python3 FindPython finds; -DPython3_EXECUTABLE=PATH chooses another. Which python3 comes
# first on the caller's PATH does not matter.
if(NOT DEFINED CACHE{Python3_EXECUTABLE} AND EXISTS ${PROJECT_SOURCE_DIR}/.venv/bin/python3)
  set(Python3_EXECUTABLE ${PROJECT_SOURCE_DIR}/.venv/bin/python3)
endif()
find_package(Python3 COMPONENTS Interpreter REQUIRED)
get_filename_component(VATTN_PYTHON_BIN_DIR ${Python3_EXECUTABLE} DIRECTORY)
message(STATUS "vattn: the tests run Python ${Python3_VERSION}: ${Python3_EXECUTABLE}")

# vattn_tests_use_python(): every test of the calling directory, whenever it is added, runs with the
# interpreter's folder first on PATH, as an activated environment would: the scripts and tools they
# start by name (python3, #!/usr/bin/env python3, pip-installed commands such as `mutate`) are its.
function(vattn_tests_use_python)
  cmake_language(DEFER CALL _vattn_tests_use_python_now)
endfunction()
function(_vattn_tests_use_python_now)
  get_property(_tests DIRECTORY PROPERTY TESTS)
  if(_tests)
    set_property(TEST ${_tests} APPEND PROPERTY ENVIRONMENT_MODIFICATION "PATH=path_list_prepend:${VATTN_PYTHON_BIN_DIR}")
  endif()
endfunction()
