# The layering of normlab's libraries, as data: which libraries' headers each library's sources may
# include, and which headers are internal to their library. Read by CMakeLists.txt (each library's
# target exposes only its public headers) and by cmake/CheckLayering.cmake (the layering/ tests),
# so the rule is written once; docs/extending.md's table ("Where things go") states it in words.

# The library folders, bottom up (folder = library = namespace = include path).
set(NORMLAB_LAYERS base autograd serialize dist nn data optim experiments)

# What each library's sources may include besides their own library's headers. Listed in full, not
# inferred: a library that wants a lower one's headers names it here, and no library names
# experiments/ (only the `normlab` command and the examples build on it).
set(NORMLAB_MAY_INCLUDE_base)
set(NORMLAB_MAY_INCLUDE_autograd base)
set(NORMLAB_MAY_INCLUDE_serialize base autograd)
set(NORMLAB_MAY_INCLUDE_dist base)
set(NORMLAB_MAY_INCLUDE_nn base autograd serialize dist)
set(NORMLAB_MAY_INCLUDE_data base autograd)
set(NORMLAB_MAY_INCLUDE_optim base autograd serialize)
set(NORMLAB_MAY_INCLUDE_experiments base autograd serialize dist nn data optim)

# The folders of experiments/, bottom up: the path of a run, from what every part uses to the
# command line. A file in one of them includes its own folder's headers and those of the folders
# below it, never one above; experiments/'s top level holds main.cc alone, which may include any.
#   support   output files and folders, number formatting, progress, Ctrl-C, the usage error
#   config    what a run is: its model (ModelSpec) and training settings (TrainConfig), plain structs
#   registry  the registries: norms and activations, optimizers and schedules, data sets
#   models    the models the archs build (MLP, CNN, LSTMs, the character models), their metadata,
#             checkpoints and evaluation
#   records   what a run gives (its records), their JSON, journals, result sets, a study's context
#   run       one run (the training loop, its observers, checkpoints, data-parallel training) and
#             the run queue that trains a study's runs
#   report    tables, statistics and claims, plots, report.md and manifests
#   studies   what the commands run: train, compare, sweep, study, eval, predict, demo
#   commands  the command line: one file per subcommand, their flags and presets
set(NORMLAB_EXPERIMENTS_LAYERS support config registry models records run report studies commands)

# Folders whose headers are internal to their library (the Highway kernels: their interfaces are
# for the library's own ops): only that library's sources include them, and its public headers
# (every other header of the library) do not...
set(NORMLAB_INTERNAL_FOLDERS autograd/kernels optim/kernels)
# ...except these public ones, which any library allowed to include their library may include:
# the Highway target's name (manifests, benchmarks) and the loop helpers of optim's kernel bodies.
set(NORMLAB_PUBLIC_INTERNAL_HEADERS autograd/kernels/target.h autograd/kernels/loop-inl.h)

# Sets ${out} to TRUE when header (a path from the repository's root, e.g. autograd/kernels/gemm.h)
# is internal to its library: under one of NORMLAB_INTERNAL_FOLDERS and not a public one.
function(normlab_is_internal header out)
  set(result FALSE)
  foreach(folder ${NORMLAB_INTERNAL_FOLDERS})
    string(FIND "${header}" "${folder}/" at)
    if(at EQUAL 0 AND NOT header IN_LIST NORMLAB_PUBLIC_INTERNAL_HEADERS)
      set(result TRUE)
    endif()
  endforeach()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# Folders that are not libraries. tests/ and bench/ may include anything, internals too: they test
# and measure the kernels themselves. examples/ and fuzz/ use normlab as its users do: the public
# headers of every library (experiments/ too) and their own folder's.
set(NORMLAB_UNCHECKED_FOLDERS tests bench)
set(NORMLAB_USER_FOLDERS examples fuzz python)
