/*
 * outer.h - the pure arithmetic of LocalSGD and DiLoCo (outer.c, the
 * FT_Outer_* calls of ftmpi.h): what a group contributes to a sync and how
 * the reduced sum becomes the new global state.  No MPI, no I/O; every
 * group runs the same float operations on the same reduced bytes, so every
 * group ends a committed sync with bitwise the same global state.
 *
 * A sync reduces (MPI_SUM) n + 1 floats: n contributions and the weight
 * (1 for a group whose parameters trained since the last committed sync,
 * 0 for a group that joined or healed in this sync: it contributes zeros).
 * The sum of the weights W is the number of groups averaged; W = 0 (every
 * group joined: the first sync of a run) changes nothing.
 *
 * Typical use (outer.c):
 *     fti_outer_pack_diloco(buf, global, local, n, w);   then buf[n] = w
 *     FT_Allreduce(MPI_IN_PLACE, buf, n + 1, MPI_FLOAT, MPI_SUM, ...)
 *     fti_outer_apply_diloco(global, mom, buf, n, buf[n], lr, mu)
 */
#ifndef FTI_OUTER_H
#define FTI_OUTER_H

#include <stddef.h>

/* LocalSGD: buf[i] = weight ? local[i] : 0. */
void fti_outer_pack_localsgd(float *buf, const float *local, size_t n, float weight);

/* LocalSGD: global[i] = sum[i] / W when W > 0; nothing when W = 0. */
void fti_outer_apply_localsgd(float *global, const float *sum, size_t n, float weight_sum);

/* DiLoCo: buf[i] = weight ? global[i] - local[i] : 0 (the pseudo-gradient). */
void fti_outer_pack_diloco(float *buf, const float *global, const float *local, size_t n,
                           float weight);

/* DiLoCo, W > 0: delta = sum[i] / W, then Nesterov momentum as PyTorch's
 * SGD(nesterov=True): m = mu * m + delta; global -= lr * (delta + mu * m).
 * Nothing when W = 0. */
void fti_outer_apply_diloco(float *global, float *momentum, const float *sum, size_t n,
                            float weight_sum, float lr, float mu);

#endif /* FTI_OUTER_H */
