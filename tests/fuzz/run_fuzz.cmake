# Runs a libFuzzer binary over RUNS inputs (or SECONDS of wall time, whichever comes first) from a
# fresh copy of the seed CORPUS in WORK, with the dictionary DICT; fails on any crash, leak,
# undefined behaviour or an input taking over 60 s (a hang), whose input libFuzzer leaves in WORK
# and this script keeps in WORK_failed.
foreach(var FUZZER CORPUS DICT WORK SECONDS RUNS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_fuzz.cmake needs -D${var}=...")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)
file(GLOB seeds ${CORPUS}/*)
file(COPY ${seeds} DESTINATION ${WORK}/corpus)
execute_process(
  COMMAND ${FUZZER} -runs=${RUNS} -max_total_time=${SECONDS} -timeout=60 -rss_limit_mb=2048
          -max_len=4096
          -dict=${DICT} -print_final_stats=1 -artifact_prefix=${WORK}/ ${WORK}/corpus
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  # The next run starts from a fresh WORK: the failing inputs are kept beside it, and shown in hex
  # (a CI log then holds them too).
  file(GLOB found ${WORK}/crash-* ${WORK}/leak-* ${WORK}/timeout-* ${WORK}/oom-*)
  set(shown "")
  foreach(input ${found})
    file(COPY ${input} DESTINATION ${WORK}_failed)
    file(READ ${input} hex LIMIT 4096 HEX)
    get_filename_component(name ${input} NAME)
    string(APPEND shown "\n  ${name} (hex): ${hex}")
  endforeach()
  message(FATAL_ERROR "${FUZZER} failed (${rc}); the input is kept in ${WORK}_failed/ (replay it "
                      "with ${FUZZER} ${WORK}_failed/crash-..., and add it to the seed "
                      "corpus)${shown}")
endif()
