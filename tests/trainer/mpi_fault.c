/* mpi_fault: an LD_PRELOAD shim (through MPI's profiling interface) that hits one MPI_Allreduce
 * of floats on one rank, so a test can see what cosched-train does at an exactly known step.
 * MPI_FAULT_RANK picks the rank and MPI_FAULT_CALL the call (1 = the first float allreduce, one
 * per step with fused gradients); every other call goes through unchanged. The call fails, or,
 * with MPI_FAULT_SIGNAL set, that signal is raised on the rank and the call goes through (a stop
 * asked for in the middle of a step, without a test racing the training for it). */
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    static long float_calls;
    const char *rank_env = getenv("MPI_FAULT_RANK"), *call_env = getenv("MPI_FAULT_CALL");
    if (rank_env && call_env && datatype == MPI_FLOAT) {
        int rank = -1;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == atoi(rank_env) && ++float_calls == atol(call_env)) {
            const char *signal_env = getenv("MPI_FAULT_SIGNAL");
            if (!signal_env)
                return MPI_ERR_OTHER;
            raise(atoi(signal_env));
        }
    }
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}
