# The layering, checked at every build (cmake -P; target `layering` in the top CMakeLists.txt):
#   analysis  <- mapping <- server ;  models behind its C ABI (models/models_api.h)
#   analysis/ includes only analysis/, and inside it (analysis/CMakeLists.txt, whose include roots
#   enforce the same at compile time): base/ only base/ ; model/ base/ and model/ ; load/ those
#   and load/ ; causal/ base/, model/ and causal/ (never rules/) ; rules/ all but load/ ;
#   mapping/ only analysis/ and mapping/ ;
#   models/ only models/ and analysis/ ; server/ anything but models/ internals (models_api.h);
#   nlohmann only in server/ and tests ; <torch/...> only in models/*.cpp ;
#   bench/harness/ (the research harness) sits above server/: it may include analysis/, mapping/,
#   server/ and models/models_api.h; no product library includes bench/ or tests/ (server/main.cpp,
#   the binary's wiring, may include bench/harness/).
# A wrong-direction include fails the build, naming the file and the line.
# Usage: cmake -DROOT=<source dir> -P check_layering.cmake
if(NOT ROOT)
  message(FATAL_ERROR "check_layering: pass -DROOT=<source dir>")
endif()
set(violations "")
foreach(folder analysis mapping models server bench/harness)
  file(GLOB_RECURSE sources RELATIVE ${ROOT} ${ROOT}/${folder}/*.h ${ROOT}/${folder}/*.cpp
       ${ROOT}/${folder}/*.c)
  foreach(rel ${sources})
    file(STRINGS ${ROOT}/${rel} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    foreach(line ${includes})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*" "\\1" target "${line}")
      set(bad "")
      if(target MATCHES "^torch/" AND NOT (folder STREQUAL "models" AND rel MATCHES "\\.cpp$"))
        set(bad "libtorch outside models/*.cpp")
      elseif(target MATCHES "^nlohmann/" AND NOT folder MATCHES "^(server|bench/harness)$")
        set(bad "nlohmann outside server/ and bench/harness/")
      elseif(target MATCHES "^tests/")
        set(bad "a library includes tests/")
      elseif(target MATCHES "^bench/" AND NOT folder STREQUAL "bench/harness" AND
             NOT rel STREQUAL "server/main.cpp")
        set(bad "a product library includes the benchmark harness (bench/)")
      elseif(folder STREQUAL "analysis" AND target MATCHES "^(mapping|server|models)/")
        set(bad "analysis/ depends on nothing above it")
      elseif(rel MATCHES "^analysis/base/" AND target MATCHES "^analysis/(model|load|causal|rules)/")
        set(bad "analysis/base/ depends on nothing above it")
      elseif(rel MATCHES "^analysis/model/" AND target MATCHES "^analysis/(load|causal|rules)/")
        set(bad "analysis/model/ depends only on analysis/base/")
      elseif(rel MATCHES "^analysis/load/" AND target MATCHES "^analysis/(causal|rules)/")
        set(bad "analysis/load/ depends only on analysis/model/ and analysis/base/")
      elseif(rel MATCHES "^analysis/causal/" AND target MATCHES "^analysis/(load|rules)/")
        set(bad "analysis/causal/ never includes the rules (or the loader)")
      elseif(rel MATCHES "^analysis/rules/" AND target MATCHES "^analysis/load/")
        set(bad "analysis/rules/ works on loaded traces, not the loader")
      elseif(folder STREQUAL "mapping" AND target MATCHES "^(server|models)/")
        set(bad "mapping/ depends only on analysis/")
      elseif(folder STREQUAL "models" AND target MATCHES "^(server|mapping)/")
        set(bad "models/ depends only on analysis/")
      elseif(rel MATCHES "^server/core/" AND
             target MATCHES "^(nlohmann/|server/scan\\.h|server/cli|server/lsp/|server/llm/)")
        set(bad "server/core/ is what both front-ends render: no JSON, CLI, LSP or LLM")
      elseif(rel MATCHES "^server/llm/" AND target MATCHES "^server/(scan\\.h|cli|lsp/)")
        set(bad "server/llm/ works on the core's scan, not a front-end")
      elseif(folder MATCHES "^(server|bench/harness)$" AND target MATCHES "^models/" AND
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
