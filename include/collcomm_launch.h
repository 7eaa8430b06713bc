/*
 * collcomm_launch — a communicator from the launcher's environment (libcollcomm_launch).
 *
 * A program started by a launcher learns its place in the job, shares the job's ccUniqueId and
 * joins, without linking MPI. The core library (collcomm.h) reads no launcher variables; this
 * library does, and only these:
 *
 *   ccrun          CCRUN_RANK, CCRUN_SIZE, CCRUN_LOCAL_RANK, CCRUN_UNIQUE_ID (the id, made by ccrun)
 *   Open MPI       OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK; the job: OMPI_MCA_ess_base_jobid
 *                  (OMPI_MCA_orte_ess_jobid, PMIX_NAMESPACE)
 *   MPICH/Hydra,   PMI_RANK, PMI_SIZE, MPI_LOCALRANKID; the job: PMI_JOBID, else Hydra's proxy
 *   other PMI      process (PMI_FD), which names the job on one host only
 *   Slurm srun     SLURM_PROCID, SLURM_STEP_NUM_TASKS (or SLURM_NTASKS), SLURM_LOCALID; the job:
 *                  SLURM_JOB_ID + SLURM_STEP_ID (a batch script without a step is not a launch)
 *   COLLCOMM_ID_FILE   where rank 0 publishes the id (default: a file under /tmp named after the job)
 *   COLLCOMM_COMM_ID   <host>:<port> of a fixed rendezvous root: then no id is exchanged at all
 *
 * Link with -lcollcomm_launch -lcollcomm (pkg-config collcomm-launch; CMake collcomm::launch).
 * Compiles as C11 and C++. Setup tier: each call runs once per communicator, before any collective.
 * docs/install.md shows a whole program.
 */
#ifndef COLLCOMM_LAUNCH_H_
#define COLLCOMM_LAUNCH_H_

#include <stddef.h>

#include "collcomm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int launched;         /* 0: started on its own (one process; ranks, if any, are threads) */
  int rank;             /* this process's rank in the job */
  int size;             /* processes in the job */
  int localRank;        /* rank among the processes on this host (-1 if unknown) */
  const char* launcher; /* "ccrun", "openmpi", "pmi", "slurm" or "none" */
} ccLaunchInfo;

/* The one call: makes this process's communicator of the job that the launcher started, as
 * ccCommInitRankConfig(comm, size, id, rank, config) would with the launcher's rank and size and
 * the job's shared id. Collective: every process of the job calls it, once per communicator, in
 * the same order. config may be NULL; config->timeout (when set) bounds the wait for rank 0's id as
 * well, else that wait is at most 300 s. info, when not NULL, receives what ccLaunchDetect found
 * (localRank picks a GPU, launcher names the launcher).
 *
 * Started without a launcher, the process is a job of one, like an MPI singleton: *comm is a
 * 1-rank communicator (rank 0 of 1) and info->launched is 0. Returns ccInvalidUsage when the
 * launcher's variables are inconsistent or the job cannot share its id, ccTimeout when rank 0's id
 * did not come, else what ccCommInitRankConfig returns; each failure of the launch step prints one
 * sentence on stderr naming what to set or check. *comm is set only on success. */
ccResult_t ccLaunchCommInit(ccComm_t* comm, ccConfig_t* config, ccLaunchInfo* info);

/* The steps of ccLaunchCommInit, for programs that want them apart (e.g. several communicators
 * from one detection, or ranks as threads when not launched). */

/* Reads the launcher's variables. Returns ccInvalidUsage (and a message on stderr) when they are
 * present but inconsistent (e.g. rank >= size). Not launched: launched 0, rank 0, size 1. */
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

#endif /* COLLCOMM_LAUNCH_H_ */
