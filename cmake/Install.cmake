# What `cmake --install build --prefix P` puts under P, included by the top-level CMakeLists.txt once
# every library is defined:
#   lib/libnormlab_<name>.a            the static libraries (base ... optim, experiments)
#   include/normlab/<name>/...          their public headers (installed by normlab_expose_headers);
#                                       the include directory is include/normlab: "nn/linear.h"
#   bin/normlab                         the command
#   share/normlab/load_in_pytorch.py    loads a normlab checkpoint into PyTorch
#   share/man/man1/normlab.1, share/bash-completion/completions/normlab,
#   share/zsh/vendor-completions/_normlab   the man page and completion scripts (cmake/ShellFiles.cmake)
#   lib/cmake/normlab/                  the CMake package: find_package(normlab CONFIG), targets
#                                       normlab::base, normlab::autograd, ..., normlab::experiments
#   lib/pkgconfig/normlab.pc            pkg-config: the libraries base ... optim in link order
# (lib is CMAKE_INSTALL_LIBDIR, e.g. lib/x86_64-linux-gnu for the prefix /usr.)
include(CMakePackageConfigHelpers)

# The libraries in link order (a library before the ones it uses), those this build has.
set(NORMLAB_INSTALLED_LIBS)
foreach(name optim nn data serialize dist autograd base)
  if(TARGET ${name})
    list(APPEND NORMLAB_INSTALLED_LIBS ${name})
  endif()
endforeach()

# Installed as libnormlab_<name>.a (a libbase.a or libdata.a in /usr/lib would collide with other
# projects'), exported as normlab::<name>.
# Their headers are C++20: a target that links one compiles as C++20 at least (the libraries
# themselves already do, by CMAKE_CXX_STANDARD).
foreach(name ${NORMLAB_INSTALLED_LIBS})
  set_target_properties(${name} PROPERTIES OUTPUT_NAME normlab_${name} EXPORT_NAME ${name})
  target_compile_features(${name} INTERFACE cxx_std_20)
endforeach()
set_target_properties(experiments_lib PROPERTIES OUTPUT_NAME normlab_experiments EXPORT_NAME experiments)
target_compile_features(experiments_lib INTERFACE cxx_std_20)

set(NORMLAB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/normlab)
install(TARGETS ${NORMLAB_INSTALLED_LIBS} EXPORT normlabTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT normlabTargets NAMESPACE normlab:: DESTINATION ${NORMLAB_CMAKE_DIR})
# experiments (the training loop, models, registries, studies of the `normlab` command) in a file of
# its own: it needs CLI11, which the other libraries do not, so a user of those does not need CLI11.
install(TARGETS experiments_lib EXPORT normlabExperimentsTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT normlabExperimentsTargets NAMESPACE normlab:: DESTINATION ${NORMLAB_CMAKE_DIR})

# The command; the directories of the shared libraries it links outside the system's (OpenMPI's
# lib folder, for one) stay in its RPATH, as in the build tree.
set_target_properties(normlab PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS normlab RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/load_in_pytorch.py DESTINATION ${CMAKE_INSTALL_DATADIR}/normlab)
include(${PROJECT_SOURCE_DIR}/cmake/ShellFiles.cmake)  # the man page and the completion scripts

# The package's dependencies, for normlabConfig.cmake's find_dependency calls.
set(NORMLAB_WITH_ZLIB OFF)
if(TARGET data)
  set(NORMLAB_WITH_ZLIB ON)
endif()
set(NORMLAB_WITH_MPI OFF)
if(MPI_CXX_FOUND)
  set(NORMLAB_WITH_MPI ON)
endif()
string(REPLACE ";" " " NORMLAB_CONFIG_LIBS "${NORMLAB_INSTALLED_LIBS}")
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/normlabConfig.cmake.in
    ${PROJECT_BINARY_DIR}/normlabConfig.cmake INSTALL_DESTINATION ${NORMLAB_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/normlabConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)  # 0.x: a minor version may break the API
install(FILES ${PROJECT_BINARY_DIR}/normlabConfig.cmake ${PROJECT_BINARY_DIR}/normlabConfigVersion.cmake
        DESTINATION ${NORMLAB_CMAKE_DIR})

# normlab.pc. The libraries are static, so their dependencies are in Requires and Libs (what a plain
# `pkg-config --libs normlab` gives must link), not in the .private fields. The prefix is found from
# the .pc file's own place (${pcfiledir}), so the file is right under any --prefix given at install.
set(NORMLAB_PC_REQUIRES libhwy libhwy-contrib)
if(NORMLAB_WITH_ZLIB)
  list(APPEND NORMLAB_PC_REQUIRES zlib)
endif()
set(NORMLAB_PC_MPI_LIBS "")
if(NORMLAB_WITH_MPI)
  # MPI's C API (dist/ calls no C++ binding): its pkg-config module when there is one (Debian's
  # mpi-c names the MPI chosen by update-alternatives, ompi-c is OpenMPI's), else its libraries.
  find_package(PkgConfig QUIET)
  set(_mpi_module "")
  if(PKG_CONFIG_FOUND)
    foreach(_module mpi-c ompi-c mpich)
      execute_process(COMMAND ${PKG_CONFIG_EXECUTABLE} --exists ${_module} RESULT_VARIABLE _missing)
      if(_missing EQUAL 0)
        set(_mpi_module ${_module})
        break()
      endif()
    endforeach()
  endif()
  if(_mpi_module)
    list(APPEND NORMLAB_PC_REQUIRES ${_mpi_module})
  else()
    string(REPLACE ";" " " NORMLAB_PC_MPI_LIBS "${MPI_CXX_LIBRARIES}")
  endif()
endif()
string(REPLACE ";" " " NORMLAB_PC_REQUIRES "${NORMLAB_PC_REQUIRES}")
set(NORMLAB_PC_LIBS "")
foreach(name ${NORMLAB_INSTALLED_LIBS})
  string(APPEND NORMLAB_PC_LIBS " -lnormlab_${name}")
endforeach()
file(RELATIVE_PATH NORMLAB_PC_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" NORMLAB_PC_PREFIX "${NORMLAB_PC_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/normlab.pc.in ${PROJECT_BINARY_DIR}/normlab.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/normlab.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# `make deb` (cpack -G DEB in the build folder): one Debian package, normlab_<version>_<arch>.deb,
# of everything above under /usr. Depends: the shared libraries the command links (libhwy1,
# libopenmpi3, zlib1g, libstdc++6, ..., found by dpkg-shlibdeps). Recommends: what the command
# uses at run time (gnuplot for the plots, the Fashion-MNIST data set and the fortunes corpus,
# python3 and python3-numpy for the Python package in /usr/lib/python3/dist-packages) and
# what a program built against the libraries and headers needs (the dependencies' -dev packages,
# CLI11 for normlab::experiments, pkg-config).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME normlab)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "normlab developers <normlab@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "from-scratch C++ training framework and normalization studies")
set(CPACK_PACKAGE_DESCRIPTION "normlab trains toy models (MLPs, CNNs, LSTMs, GPTs) with BatchNorm,
LayerNorm, GroupNorm, RMSNorm and friends and reports how they compare. The normlab command runs
the studies; the static libraries (autograd, nn, optim, data, serialize, dist, experiments), their
headers, a CMake package (find_package(normlab)) and normlab.pc let C++ programs use them; the
Python package normlab (NumPy in and out, normlab.nn, normlab.optim) lets Python programs.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "gnuplot-nox, dataset-fashion-mnist, fortunes, libhwy-dev, \
nlohmann-json3-dev, zlib1g-dev, libopenmpi-dev, libcli11-dev, pkg-config, python3, python3-numpy")
include(CPack)
