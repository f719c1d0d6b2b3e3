/*
 * affinity.h - where a rank's ftmpi-baby child runs (DESIGN section 5,
 * Affinity): hwloc picks, for a local rank index and CUDA_VISIBLE_DEVICES,
 * the GPU, the NUMA node and cores nearest to it, and the NICs ranked by
 * distance from it: under the same PCI host bridge first (fewest PCI hops:
 * the same PCIe switch before another one), then in the same package, then
 * the rest.  The child is bound to those cores (ftmpi-baby --cpus) and gets
 * NCCL_IB_HCA / NCCL_SOCKET_IFNAME naming the nearest NICs unless the user
 * set them.  Without a GPU nothing is chosen: the rank's binding is kept
 * and the child inherits it.  FTMPI_AFFINITY=0 turns the whole thing off
 * (the caller does not call in here).
 *
 * MPI-free (libfti_comm): ftmpi-info prints the choice (fti_affinity_report)
 * without MPI.  Tests load HWLOC_XMLFILE-style topologies (tests/affinity/).
 */
#ifndef FTI_AFFINITY_H
#define FTI_AFFINITY_H

#include <stdio.h>

#include "base/sizes.h"

#define FTI_AFFINITY_MAX_NICS 16
#define FTI_AFFINITY_NAME_SIZE 32

enum fti_nic_class { FTI_NIC_HOST_BRIDGE, FTI_NIC_PACKAGE, FTI_NIC_FAR };

typedef struct fti_affinity_nic {
    char ib[FTI_AFFINITY_NAME_SIZE];  /* openfabrics device ("mlx5_0"), "" none */
    char net[FTI_AFFINITY_NAME_SIZE]; /* network interface ("ib0", "eth2"), "" none */
    char busid[FTI_AFFINITY_NAME_SIZE];
    int cls;  /* enum fti_nic_class */
    int hops; /* edges between the GPU's and the NIC's PCI devices */
} fti_affinity_nic_t;

typedef struct fti_affinity {
    int ngpus;                             /* GPUs in the topology */
    int gpu;                               /* the chosen one's index, -1 none */
    char gpu_name[FTI_AFFINITY_NAME_SIZE]; /* "cuda0", "nvml0", "rsmi0" */
    char gpu_busid[FTI_AFFINITY_NAME_SIZE];
    int numa;                      /* OS index of the NUMA node, -1 */
    char cpus[FTI_REASON_SIZE];    /* cpu list for the child, "" = keep the rank's */
    int nnics;                     /* ranked, nearest first */
    fti_affinity_nic_t nic[FTI_AFFINITY_MAX_NICS];
    char why[FTI_REASON_SIZE];
} fti_affinity_t;

/* Chooses for local_rank (>= 0).  xml: an hwloc XML file, NULL for this
 * machine (which honours HWLOC_XMLFILE).  cuda_visible: the value of
 * CUDA_VISIBLE_DEVICES, NULL if unset (integers; other entries -- UUIDs --
 * make it fall back to every GPU in index order, said in why).  Errors:
 * FT_ERR_ARG, FT_ERR_SYSTEM (hwloc could not load the topology). */
int fti_affinity_pick(const char *xml, int local_rank, const char *cuda_visible,
                      fti_affinity_t *a_p);

/* The environment for the child: up to 2 "NAME=value" strings into env
 * (NCCL_IB_HCA from the nearest NICs' openfabrics names, NCCL_SOCKET_IFNAME
 * from their interfaces), each only if the name is not set in this
 * process's environment; returns how many. */
int fti_affinity_env(const fti_affinity_t *a, char env[2][FTI_REASON_SIZE]);

/* Prints, for local ranks 0..nlocal-1, the GPU, cores, NUMA node, NICs
 * and why (ftmpi-info --topology).  Returns FT_SUCCESS or the first error. */
int fti_affinity_report(FILE *out, const char *xml, int nlocal, const char *cuda_visible);

#endif
