/* mpi_fault: an LD_PRELOAD shim (through MPI's profiling interface) that makes one
 * MPI_Allreduce of floats fail on one rank, so a test can see what cosched-train does when
 * its gradient allreduce fails mid-run. MPI_FAULT_RANK picks the rank and MPI_FAULT_CALL the
 * call (1 = the first float allreduce); every other call goes through unchanged. */
#include <mpi.h>
#include <stdlib.h>

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    static long float_calls;
    const char *rank_env = getenv("MPI_FAULT_RANK"), *call_env = getenv("MPI_FAULT_CALL");
    if (rank_env && call_env && datatype == MPI_FLOAT) {
        int rank = -1;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == atoi(rank_env) && ++float_calls == atol(call_env))
            return MPI_ERR_OTHER;
    }
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}
