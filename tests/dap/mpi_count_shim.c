/* Counts the MPI collective calls a process makes (the PMPI profiling
 * interface): LD_PRELOAD it into an mpiexec run; each wrapper counts its
 * call by name and forwards to PMPI_<name>.  Python reads the counts
 * through ctypes: nclx_count("Allgather") (the _c large-count variant is
 * counted under the same name), nclx_count_total() (every collective
 * below), nclx_count_reset().  Built by tests/dap/test_reduce_collectives.py. */
#include <mpi.h>
#include <string.h>

static const char *names[] = {
    "Allgather", "Allgatherv", "Allreduce", "Reduce", "Bcast", "Gather", "Gatherv",
    "Scatter", "Scatterv", "Alltoall", "Alltoallv", "Alltoallw", "Barrier",
    "Reduce_scatter", "Reduce_scatter_block", "Scan", "Exscan", "Iallreduce",
    "Ibarrier", "Ibcast", "Comm_split", "Comm_dup", 0};
static long counts[64];

static void hit(int i) { counts[i]++; }

long nclx_count(const char *name) {
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], name) == 0) return counts[i];
    return -1;
}
long nclx_count_total(void) {
    long t = 0;
    for (int i = 0; names[i]; i++) t += counts[i];
    return t;
}
void nclx_count_reset(void) { memset(counts, 0, sizeof counts); }

#define W(i, name, params, args) \
    int MPI_##name params { hit(i); return PMPI_##name args; }

W(0, Allgather, (const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm c), (sb, sc, st, rb, rc, rt, c))
W(0, Allgather_c, (const void *sb, MPI_Count sc, MPI_Datatype st, void *rb, MPI_Count rc, MPI_Datatype rt, MPI_Comm c), (sb, sc, st, rb, rc, rt, c))
W(1, Allgatherv, (const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[], const int d[], MPI_Datatype rt, MPI_Comm c), (sb, sc, st, rb, rc, d, rt, c))
W(1, Allgatherv_c, (const void *sb, MPI_Count sc, MPI_Datatype st, void *rb, const MPI_Count rc[], const MPI_Aint d[], MPI_Datatype rt, MPI_Comm c), (sb, sc, st, rb, rc, d, rt, c))
W(2, Allreduce, (const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c), (sb, rb, n, t, op, c))
W(2, Allreduce_c, (const void *sb, void *rb, MPI_Count n, MPI_Datatype t, MPI_Op op, MPI_Comm c), (sb, rb, n, t, op, c))
W(3, Reduce, (const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, int r, MPI_Comm c), (sb, rb, n, t, op, r, c))
W(3, Reduce_c, (const void *sb, void *rb, MPI_Count n, MPI_Datatype t, MPI_Op op, int r, MPI_Comm c), (sb, rb, n, t, op, r, c))
W(4, Bcast, (void *b, int n, MPI_Datatype t, int r, MPI_Comm c), (b, n, t, r, c))
W(4, Bcast_c, (void *b, MPI_Count n, MPI_Datatype t, int r, MPI_Comm c), (b, n, t, r, c))
W(5, Gather, (const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int r, MPI_Comm c), (sb, sc, st, rb, rc, rt, r, c))
W(5, Gather_c, (const void *sb, MPI_Count sc, MPI_Datatype st, void *rb, MPI_Count rc, MPI_Datatype rt, int r, MPI_Comm c), (sb, sc, st, rb, rc, rt, r, c))
W(6, Gatherv, (const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[], const int d[], MPI_Datatype rt, int r, MPI_Comm c), (sb, sc, st, rb, rc, d, rt, r, c))
W(6, Gatherv_c, (const void *sb, MPI_Count sc, MPI_Datatype st, void *rb, const MPI_Count rc[], const MPI_Aint d[], MPI_Datatype rt, int r, MPI_Comm c), (sb, sc, st, rb, rc, d, rt, r, c))
W(7, Scatter, (const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int r, MPI_Comm c), (sb, sc, st, rb, rc, rt, r, c))
W(7, Scatter_c, (const void *sb, MPI_Count sc, MPI_Datatype st, void *rb, MPI_Count rc, MPI_Datatype rt, int r, MPI_Comm c), (sb, sc, st, rb, rc, rt, r, c))
W(8, Scatterv, (const void *sb, const int sc[], const int d[], MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int r, MPI_Comm c), (sb, sc, d, st, rb, rc, rt, r, c))
W(8, Scatterv_c, (const void *sb, const MPI_Count sc[], const MPI_Aint d[], MPI_Datatype st, void *rb, MPI_Count rc, MPI_Datatype rt, int r, MPI_Comm c), (sb, sc, d, st, rb, rc, rt, r, c))
W(9, Alltoall, (const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm c), (sb, sc, st, rb, rc, rt, c))
W(9, Alltoall_c, (const void *sb, MPI_Count sc, MPI_Datatype st, void *rb, MPI_Count rc, MPI_Datatype rt, MPI_Comm c), (sb, sc, st, rb, rc, rt, c))
W(10, Alltoallv, (const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb, const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm c), (sb, sc, sd, st, rb, rc, rd, rt, c))
W(10, Alltoallv_c, (const void *sb, const MPI_Count sc[], const MPI_Aint sd[], MPI_Datatype st, void *rb, const MPI_Count rc[], const MPI_Aint rd[], MPI_Datatype rt, MPI_Comm c), (sb, sc, sd, st, rb, rc, rd, rt, c))
W(11, Alltoallw, (const void *sb, const int sc[], const int sd[], const MPI_Datatype st[], void *rb, const int rc[], const int rd[], const MPI_Datatype rt[], MPI_Comm c), (sb, sc, sd, st, rb, rc, rd, rt, c))
W(11, Alltoallw_c, (const void *sb, const MPI_Count sc[], const MPI_Aint sd[], const MPI_Datatype st[], void *rb, const MPI_Count rc[], const MPI_Aint rd[], const MPI_Datatype rt[], MPI_Comm c), (sb, sc, sd, st, rb, rc, rd, rt, c))
W(12, Barrier, (MPI_Comm c), (c))
W(13, Reduce_scatter, (const void *sb, void *rb, const int rc[], MPI_Datatype t, MPI_Op op, MPI_Comm c), (sb, rb, rc, t, op, c))
W(13, Reduce_scatter_c, (const void *sb, void *rb, const MPI_Count rc[], MPI_Datatype t, MPI_Op op, MPI_Comm c), (sb, rb, rc, t, op, c))
W(14, Reduce_scatter_block, (const void *sb, void *rb, int rc, MPI_Datatype t, MPI_Op op, MPI_Comm c), (sb, rb, rc, t, op, c))
W(14, Reduce_scatter_block_c, (const void *sb, void *rb, MPI_Count rc, MPI_Datatype t, MPI_Op op, MPI_Comm c), (sb, rb, rc, t, op, c))
W(15, Scan, (const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c), (sb, rb, n, t, op, c))
W(15, Scan_c, (const void *sb, void *rb, MPI_Count n, MPI_Datatype t, MPI_Op op, MPI_Comm c), (sb, rb, n, t, op, c))
W(16, Exscan, (const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c), (sb, rb, n, t, op, c))
W(16, Exscan_c, (const void *sb, void *rb, MPI_Count n, MPI_Datatype t, MPI_Op op, MPI_Comm c), (sb, rb, n, t, op, c))
W(17, Iallreduce, (const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request *q), (sb, rb, n, t, op, c, q))
W(17, Iallreduce_c, (const void *sb, void *rb, MPI_Count n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request *q), (sb, rb, n, t, op, c, q))
W(18, Ibarrier, (MPI_Comm c, MPI_Request *q), (c, q))
W(19, Ibcast, (void *b, int n, MPI_Datatype t, int r, MPI_Comm c, MPI_Request *q), (b, n, t, r, c, q))
W(19, Ibcast_c, (void *b, MPI_Count n, MPI_Datatype t, int r, MPI_Comm c, MPI_Request *q), (b, n, t, r, c, q))
W(20, Comm_split, (MPI_Comm c, int color, int key, MPI_Comm *nc), (c, color, key, nc))
W(21, Comm_dup, (MPI_Comm c, MPI_Comm *nc), (c, nc))
