/* V1 of gradsync's validation (README.md, How the simulation works): SimGrid's SMPI
 * MPI_Allreduce as a peer.
 *
 * For each message size on the command line (bytes, a multiple of 4), runs one
 * MPI_Allreduce(MPI_FLOAT, MPI_SUM) of bytes/4 floats after a barrier and prints, on rank 0,
 * "bytes time_us" with the simulated time of that one call (MPI_Wtime under SMPI is simulated
 * time). The time runs from the moment the last rank leaves the barrier (a ring cannot progress
 * before every rank has entered it; the barrier's own release skews ranks by one hop) to the
 * moment the last rank leaves MPI_Allreduce. Run with --cfg=smpi/wtime:0, or every MPI_Wtime
 * call injects 10 ns of simulated time. Buffers come from SMPI_SHARED_MALLOC so 1 GiB at 64 ranks costs no real memory; run
 * with --cfg=smpi/shared-malloc-blocksize:1073741824 so large buffers fold onto one block.
 *
 * --op noop (before the sizes) reduces with a user-defined commutative no-op instead of
 * MPI_SUM: the same messages and the same simulated time, but SMPI no longer runs the float
 * additions for real (at 64 ranks and 1 GiB that is 17e9 additions, ~15 s of wall time and
 * ~16 M page faults on the shared block).
 *
 * Build: smpicc -O2 -o allreduce_bench allreduce_bench.c
 * Run:   smpirun -np N -platform p.xml -hostfile h.txt --cfg=smpi/allreduce:lr ... \
 *          ./allreduce_bench 1048576 67108864
 */
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void no_reduction(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)in;
  (void)inout;
  (void)len;
  (void)type;
}

int main(int argc, char* argv[]) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 0;
  MPI_Op op = MPI_SUM;
  int first = 1;
  if (argc > 2 && strcmp(argv[1], "--op") == 0) {
    if (strcmp(argv[2], "noop") == 0) {
      MPI_Op_create(no_reduction, 1, &op);
    } else if (strcmp(argv[2], "sum") != 0) {
      if (rank == 0) fprintf(stderr, "allreduce_bench: --op takes sum or noop, got '%s'\n", argv[2]);
      status = 2;
    }
    first = 3;
  }
  for (int i = first; i < argc && status == 0; ++i) {
    char* end = NULL;
    long long bytes = strtoll(argv[i], &end, 10);
    if (end == argv[i] || *end != '\0' || bytes <= 0 || bytes % 4 != 0) {
      if (rank == 0) fprintf(stderr, "allreduce_bench: bad size '%s' (bytes, multiple of 4)\n", argv[i]);
      status = 2;
      break;
    }
    int count = (int)(bytes / 4);
    float* send = (float*)SMPI_SHARED_MALLOC((size_t)bytes);
    float* recv = (float*)SMPI_SHARED_MALLOC((size_t)bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    MPI_Allreduce(send, recv, count, MPI_FLOAT, op, MPI_COMM_WORLD);
    double stamps[2] = {start, MPI_Wtime()};
    double last[2] = {0.0, 0.0}; /* last rank to start, last rank to finish */
    MPI_Reduce(stamps, last, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%lld %.6f\n", bytes, (last[1] - last[0]) * 1e6);
    SMPI_SHARED_FREE(send);
    SMPI_SHARED_FREE(recv);
  }
  if (op != MPI_SUM) MPI_Op_free(&op);
  fflush(stdout);
  MPI_Finalize();
  return status;
}
