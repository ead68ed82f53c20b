/*===- MpiPlugin.h - the table libmemfit-mpi.so exports -----------*- C -*-===//
 *
 * The C interface between the runtime and its MPI plugin (runtime/mpi):
 * the plugin links MPI; the runtime loads it with dlopen and calls through
 * this table only. Every function returns 0 on success, else writes a
 * message into `error` (of `length` bytes, always terminated) and returns
 * non-zero. Counts are elements; a count above INT_MAX is an error.
 *
 *===----------------------------------------------------------------------===*/

#ifndef MEMFIT_RUNTIME_SRC_MPIPLUGIN_H
#define MEMFIT_RUNTIME_SRC_MPIPLUGIN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MEMFIT_MPI_API_VERSION 2

/* Element types and reductions the plugin knows. */
enum { MEMFIT_MPI_F32 = 0, MEMFIT_MPI_F64 = 1, MEMFIT_MPI_I32 = 2,
       MEMFIT_MPI_I64 = 3, MEMFIT_MPI_BYTE = 4 };
enum { MEMFIT_MPI_SUM = 0, MEMFIT_MPI_MAX = 1, MEMFIT_MPI_MIN = 2 };

typedef struct memfit_mpi_api {
  int version;
  /* MPI_Init_thread (serialized: one call at a time, from any thread)
   * unless MPI is initialized; rank and size of MPI_COMM_WORLD. */
  int (*init)(int *rank, int *size, char *error, size_t length);
  int (*finalize)(void);
  /* in == out: in place. */
  int (*all_reduce)(const void *in, void *out, long long count, int type,
                    int op, char *error, size_t length);
  /* `count` elements per rank come out; in holds count * size. */
  int (*reduce_scatter)(const void *in, void *out, long long count, int type,
                        int op, char *error, size_t length);
  /* `count` elements per rank go in; out holds count * size. */
  int (*all_gather)(const void *in, void *out, long long count, int type,
                    char *error, size_t length);
  int (*broadcast)(void *data, long long count, int type, int root,
                   char *error, size_t length);
  int (*barrier)(char *error, size_t length);
  void (*abort)(int code);
  /* MPI_Get_library_version's first line. */
  const char *(*library)(void);
  /* 1 when MPI was initialized with at least MPI_THREAD_SERIALIZED: the
   * collectives may be called from a thread of their own. */
  int (*serialized)(void);
} memfit_mpi_api;

/* The one symbol the plugin exports. */
const memfit_mpi_api *memfit_mpi_get_api(void);

#ifdef __cplusplus
}
#endif

#endif /* MEMFIT_RUNTIME_SRC_MPIPLUGIN_H */
