# The order of the sub-folders inside a part's src/ (docs/architecture.md "Folders").
#
# A part's src/ that grew past about 20 files is split into sub-folders named after its parts
# (profiler/capture/src: cupti/, device/, ingest/, sink/...; tuner/src: io/, measure/, plan/...).
# edo_source_folders() declares them from top to bottom; at the end of the configure step
# edo_check_layers() reads every file under them and refuses an #include of a header in a
# sub-folder listed before the including file's own (a wrong-way include inside the part).
# Files directly in src/ are outside the order: they may include, and be included by, any
# sub-folder (in the tracer: the process's state and its life, which every part reports into
# and which drives every part; in the tuner: tune() itself).

# edo_source_folders(<out-var> <src-dir> <sub-folder>...)
# Declares the sub-folders of <src-dir>, top to bottom; every sub-folder on disk must be named.
# Sets <out-var> (in the cache too, for the part's unit tests) to <src-dir> and its
# sub-folders: the PRIVATE include folders of the part's targets, so that a file names a
# header of its part by the header's file name, wherever the two files lie.
function(edo_source_folders out src)
  set(dirs ${src})
  foreach(sub IN LISTS ARGN)
    if(NOT IS_DIRECTORY ${src}/${sub})
      message(FATAL_ERROR "edo_source_folders: ${src}/${sub} is not a folder: declare the sub-folders that exist")
    endif()
    list(APPEND dirs ${src}/${sub})
  endforeach()
  file(GLOB entries LIST_DIRECTORIES true ${src}/*)
  foreach(e IN LISTS entries)
    get_filename_component(name ${e} NAME)
    if(IS_DIRECTORY ${e} AND NOT name IN_LIST ARGN)
      message(FATAL_ERROR "edo_source_folders: ${src}/${name} is not in the declared order of ${src}: add it where it belongs (top to bottom)")
    endif()
  endforeach()
  list(JOIN ARGN "," subs)
  set_property(GLOBAL APPEND PROPERTY EDO_FOLDER_ORDERS "${src}=${subs}")
  set(${out} ${dirs} CACHE INTERNAL "the folders of ${src} (edo_source_folders)")
endfunction()

# Only for tests/integration/layers: `file` is read as if it lay in the sub-folder `folder`.
function(edo_place_in_source_folder folder file)
  set_property(GLOBAL APPEND PROPERTY EDO_FOLDER_PLACED "${folder}|${file}")
endfunction()

# The sub-folder (of `subs`) that `file` lies in under `src`, or "" (directly in src/ or outside).
function(_edo_sub_folder_of src subs file out)
  set(sub "")
  file(RELATIVE_PATH rel ${src} ${file})
  if(rel MATCHES "^([^/]+)/")
    if(CMAKE_MATCH_1 IN_LIST subs)
      set(sub ${CMAKE_MATCH_1})
    endif()
  endif()
  set(${out} "${sub}" PARENT_SCOPE)
endfunction()

# The wrong-way includes inside the declared src/ folders, appended to the list `problems`.
function(_edo_check_folder_orders problems_var)
  set(found_problems ${${problems_var}})
  get_property(orders GLOBAL PROPERTY EDO_FOLDER_ORDERS)
  get_property(placed GLOBAL PROPERTY EDO_FOLDER_PLACED)
  foreach(order IN LISTS orders)
    string(REGEX REPLACE "=.*" "" src "${order}")
    string(REGEX REPLACE "^[^=]*=" "" subs "${order}")
    string(REPLACE "," ";" subs "${subs}")
    set(dirs ${src})
    foreach(sub IN LISTS subs)
      list(APPEND dirs ${src}/${sub})
    endforeach()
    _edo_rel(${src} src_rel)
    list(JOIN subs ", " order_text)
    set(rank 0)
    foreach(sub IN LISTS subs)
      file(GLOB_RECURSE files ${src}/${sub}/*.h ${src}/${sub}/*.hpp ${src}/${sub}/*.cuh
           ${src}/${sub}/*.c ${src}/${sub}/*.cc ${src}/${sub}/*.cpp ${src}/${sub}/*.cu)
      foreach(p IN LISTS placed)
        string(REPLACE "|" ";" pair "${p}")
        list(GET pair 0 folder)
        if(folder STREQUAL "${src}/${sub}")
          list(GET pair 1 placed_file)
          list(APPEND files ${placed_file})
        endif()
      endforeach()
      foreach(file IN LISTS files)
        _edo_included_files(${file} "${dirs}" targets)
        foreach(to IN LISTS targets)
          _edo_sub_folder_of(${src} "${subs}" ${to} to_sub)
          list(FIND subs "${to_sub}" to_rank)
          if(to_sub AND to_rank LESS rank)
            _edo_rel(${file} file_rel)
            _edo_rel(${to} to_rel)
            list(APPEND found_problems "${src_rel}/${sub}/ includes ${to_rel} (${file_rel}): ${to_sub}/ is above ${sub}/ in the order of ${src_rel} (top to bottom: ${order_text})")
          endif()
        endforeach()
      endforeach()
      math(EXPR rank "${rank} + 1")
    endforeach()
  endforeach()
  set(${problems_var} ${found_problems} PARENT_SCOPE)
endfunction()
