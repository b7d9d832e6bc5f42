# `mpirun -np NP gstat pca --distributed DATA` prints exactly what `gstat pca DATA` prints.
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${GSTAT} pca ${DATA} OUTPUT_FILE ${WORK}/single.txt RESULT_VARIABLE rc1)
execute_process(COMMAND ${MPIEXEC} -np ${NP} --oversubscribe ${GSTAT} pca --distributed ${DATA}
                OUTPUT_FILE ${WORK}/distributed.txt RESULT_VARIABLE rc2 TIMEOUT 100)
if(NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0)
  message(FATAL_ERROR "exit statuses: single ${rc1}, distributed ${rc2}")
endif()
file(READ ${WORK}/single.txt a)
file(READ ${WORK}/distributed.txt b)
if(NOT a STREQUAL b OR a STREQUAL "")
  message(FATAL_ERROR "outputs differ:\n--- gstat pca\n${a}\n--- mpirun -np ${NP} gstat pca --distributed\n${b}")
endif()
