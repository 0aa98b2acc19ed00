# The layering, checked at every build (cmake -P; target `layering` in the top CMakeLists.txt):
#   analysis  <- mapping <- server ;  models behind its C ABI (models/models_api.h)
#   analysis/ includes only analysis/ ; mapping/ only analysis/ and mapping/ ;
#   models/ only models/ and analysis/ ; server/ anything but models/ internals (models_api.h);
#   nlohmann only in server/ and tests ; <torch/...> only in models/*.cpp ;
#   bench/harness code is not in the product libraries (none of them includes tests/).
# A wrong-direction include fails the build, naming the file and the line.
# Usage: cmake -DROOT=<source dir> -P check_layering.cmake
if(NOT ROOT)
  message(FATAL_ERROR "check_layering: pass -DROOT=<source dir>")
endif()
set(violations "")
foreach(folder analysis mapping models server)
  file(GLOB_RECURSE sources RELATIVE ${ROOT} ${ROOT}/${folder}/*.h ${ROOT}/${folder}/*.cpp
       ${ROOT}/${folder}/*.c)
  foreach(rel ${sources})
    file(STRINGS ${ROOT}/${rel} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    foreach(line ${includes})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*" "\\1" target "${line}")
      set(bad "")
      if(target MATCHES "^torch/" AND NOT (folder STREQUAL "models" AND rel MATCHES "\\.cpp$"))
        set(bad "libtorch outside models/*.cpp")
      elseif(target MATCHES "^nlohmann/" AND NOT folder STREQUAL "server")
        set(bad "nlohmann outside server/")
      elseif(target MATCHES "^tests/")
        set(bad "a product library includes tests/")
      elseif(folder STREQUAL "analysis" AND target MATCHES "^(mapping|server|models)/")
        set(bad "analysis/ depends on nothing above it")
      elseif(folder STREQUAL "mapping" AND target MATCHES "^(server|models)/")
        set(bad "mapping/ depends only on analysis/")
      elseif(folder STREQUAL "models" AND target MATCHES "^(server|mapping)/")
        set(bad "models/ depends only on analysis/")
      elseif(folder STREQUAL "server" AND target MATCHES "^models/" AND
             NOT target STREQUAL "models/models_api.h")
        set(bad "server/ reaches models/ only through its C ABI (models/models_api.h)")
      endif()
      if(bad)
        string(APPEND violations "  ${rel}: #include \"${target}\": ${bad}\n")
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "wrong-direction includes (docs/architecture.md):\n${violations}")
endif()
