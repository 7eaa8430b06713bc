/*
 * How a program started by a launcher learns its place in the job, and shares the job's
 * ccUniqueId, without linking MPI. Used by the perf binaries and the examples (not by the library,
 * which reads no launcher variables).
 *
 * Launchers understood: ccrun (CCRUN_RANK, CCRUN_SIZE, CCRUN_LOCAL_RANK, CCRUN_UNIQUE_ID),
 * Open MPI (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK), MPICH/Hydra and other PMI launchers
 * (PMI_RANK/PMI_SIZE, MPI_LOCALRANKID), Slurm srun (SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID).
 */
#ifndef COLLCOMM_LAUNCH_ENV_H_
#define COLLCOMM_LAUNCH_ENV_H_

#include "collcomm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int launched;        /* 0: started on its own (one process; ranks, if any, are threads) */
  int rank;            /* this process's rank in the job */
  int size;            /* processes in the job */
  int localRank;       /* rank among the processes on this host (-1 if unknown) */
  const char* launcher; /* "ccrun", "openmpi", "pmi", "slurm" or "none" */
} ccLaunchInfo;

/* Reads the launcher's variables. Returns ccInvalidUsage (and a message on stderr) when they are
 * present but inconsistent (e.g. rank >= size). */
ccResult_t ccLaunchDetect(ccLaunchInfo* info);

/* Gives every process of a launched job the same id: from CCRUN_UNIQUE_ID (ccrun makes it), else
 * rank 0 calls ccGetUniqueId and publishes it in a file that the other ranks poll for up to
 * timeoutSeconds: $COLLCOMM_ID_FILE if set, else a path under /tmp named after the launcher's job
 * id. With COLLCOMM_COMM_ID set, every rank calls ccGetUniqueId (which then needs no exchange).
 * timeoutSeconds <= 0 means 300. Call it once per communicator, in the same order on every rank. */
ccResult_t ccLaunchShareId(const ccLaunchInfo* info, ccUniqueId* id, int timeoutSeconds);

/* Where ccLaunchShareId publishes this job's id: writes the path to out and returns 0; returns -1
 * when the job shares its id another way (ccrun, not launched), its job cannot be named, or outLen
 * is too small. For messages and tests; COLLCOMM_ID_FILE, when set, is the answer. */
int ccLaunchIdFilePath(const ccLaunchInfo* info, char* out, size_t outLen);

/* Hex text of an id and back (2*CC_UNIQUE_ID_BYTES characters); decode returns 0 on success. */
void ccLaunchEncodeId(const ccUniqueId* id, char* out /* 2*CC_UNIQUE_ID_BYTES+1 */);
int ccLaunchDecodeId(const char* text, ccUniqueId* id);

#ifdef __cplusplus
}
#endif

#endif /* COLLCOMM_LAUNCH_ENV_H_ */
