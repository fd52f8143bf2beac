# Runs a libFuzzer binary over RUNS inputs (or SECONDS of wall time, whichever comes first) from a
# fresh copy of the seed CORPUS in WORK, with the dictionary DICT; fails on any crash, leak,
# undefined behaviour or an input taking over 60 s (a hang), whose input libFuzzer leaves in WORK.
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
  message(FATAL_ERROR "${FUZZER} failed (${rc}); the input is in ${WORK}/ (replay it with "
                      "${FUZZER} ${WORK}/crash-..., and add it to the seed corpus)")
endif()
