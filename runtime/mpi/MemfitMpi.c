/*===- MemfitMpi.c - libmemfit-mpi.so: MPI for memfit's runtime -----------===//
 *
 * The runtime's collectives on host memory through MPI (MPI_COMM_WORLD),
 * behind the table of runtime/src/MpiPlugin.h. Built only where CMake
 * finds MPI; the runtime loads it with dlopen when a run has more than one
 * rank, so binaries start without MPI installed.
 *
 *===----------------------------------------------------------------------===*/

#include "MpiPlugin.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int initializedHere = 0;

/* MPI's message for `code`, after `what`. */
static int fail(const char *what, int code, char *error, size_t length) {
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  if (MPI_Error_string(code, text, &n) != MPI_SUCCESS)
    snprintf(text, sizeof(text), "MPI error %d", code);
  snprintf(error, length, "%s: %s", what, text);
  return 1;
}

static int typeOf(int type, MPI_Datatype *out) {
  switch (type) {
  case MEMFIT_MPI_F32: *out = MPI_FLOAT; return 0;
  case MEMFIT_MPI_F64: *out = MPI_DOUBLE; return 0;
  case MEMFIT_MPI_I32: *out = MPI_INT32_T; return 0;
  case MEMFIT_MPI_I64: *out = MPI_INT64_T; return 0;
  case MEMFIT_MPI_BYTE: *out = MPI_BYTE; return 0;
  }
  return 1;
}

static int opOf(int op, MPI_Op *out) {
  switch (op) {
  case MEMFIT_MPI_SUM: *out = MPI_SUM; return 0;
  case MEMFIT_MPI_MAX: *out = MPI_MAX; return 0;
  case MEMFIT_MPI_MIN: *out = MPI_MIN; return 0;
  }
  return 1;
}

/* The MPI type, op and int count of a call, or an error. */
static int arguments(long long count, int type, int op, MPI_Datatype *t,
                     MPI_Op *o, char *error, size_t length) {
  if (count < 0 || count > INT_MAX) {
    snprintf(error, length, "%lld elements: MPI counts stop at %d", count,
             INT_MAX);
    return 1;
  }
  if (typeOf(type, t)) {
    snprintf(error, length, "unknown element type %d", type);
    return 1;
  }
  if (o && opOf(op, o)) {
    snprintf(error, length, "unknown reduction %d", op);
    return 1;
  }
  return 0;
}

static int init(int *rank, int *size, char *error, size_t length) {
  int initialized = 0, code;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    code = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (code != MPI_SUCCESS)
      return fail("MPI_Init_thread", code, error, length);
    initializedHere = 1;
  }
  /* Errors come back as codes, not as an abort inside MPI. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return 0;
}

static int finalize(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (initializedHere && !finalized)
    return MPI_Finalize() != MPI_SUCCESS;
  return 0;
}

static int allReduce(const void *in, void *out, long long count, int type,
                     int op, char *error, size_t length) {
  MPI_Datatype t;
  MPI_Op o;
  if (arguments(count, type, op, &t, &o, error, length))
    return 1;
  int code = MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, (int)count, t,
                           o, MPI_COMM_WORLD);
  return code == MPI_SUCCESS ? 0 : fail("MPI_Allreduce", code, error, length);
}

static int reduceScatter(const void *in, void *out, long long count, int type,
                         int op, char *error, size_t length) {
  MPI_Datatype t;
  MPI_Op o;
  if (arguments(count, type, op, &t, &o, error, length))
    return 1;
  int code = MPI_Reduce_scatter_block(in, out, (int)count, t, o,
                                      MPI_COMM_WORLD);
  return code == MPI_SUCCESS ? 0
                             : fail("MPI_Reduce_scatter_block", code, error,
                                    length);
}

static int allGather(const void *in, void *out, long long count, int type,
                     char *error, size_t length) {
  MPI_Datatype t;
  if (arguments(count, type, 0, &t, NULL, error, length))
    return 1;
  int code = MPI_Allgather(in, (int)count, t, out, (int)count, t,
                           MPI_COMM_WORLD);
  return code == MPI_SUCCESS ? 0 : fail("MPI_Allgather", code, error, length);
}

static int broadcast(void *data, long long count, int type, int root,
                     char *error, size_t length) {
  MPI_Datatype t;
  if (arguments(count, type, 0, &t, NULL, error, length))
    return 1;
  int code = MPI_Bcast(data, (int)count, t, root, MPI_COMM_WORLD);
  return code == MPI_SUCCESS ? 0 : fail("MPI_Bcast", code, error, length);
}

static int barrier(char *error, size_t length) {
  int code = MPI_Barrier(MPI_COMM_WORLD);
  return code == MPI_SUCCESS ? 0 : fail("MPI_Barrier", code, error, length);
}

static void abortAll(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

static const char *library(void) {
  static char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int n = 0;
  if (!text[0] && MPI_Get_library_version(text, &n) == MPI_SUCCESS) {
    char *end = strpbrk(text, ",\n");
    if (end)
      *end = 0;
  }
  return text;
}

static int serialized(void) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided >= MPI_THREAD_SERIALIZED;
}

const memfit_mpi_api *memfit_mpi_get_api(void) {
  static const memfit_mpi_api api = {
      MEMFIT_MPI_API_VERSION, init,      finalize, allReduce,  reduceScatter,
      allGather,              broadcast, barrier,  abortAll,   library,
      serialized};
  return &api;
}
