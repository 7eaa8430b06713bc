/*
 * The model and data set of the data-parallel examples (dp_loss, dp_training): a linear layer
 * (weights W[CLASSES][FEATURES], bias b[CLASSES]) followed by softmax cross-entropy (log-softmax
 * loss), on a small deterministic data set every rank can make for itself. Plain float code, no
 * collcomm: the examples add the communication around it.
 */
#ifndef COLLCOMM_TINY_MODEL_H_
#define COLLCOMM_TINY_MODEL_H_

#include <math.h>
#include <string.h>

#define FEATURES 8
#define CLASSES 4
#define SAMPLES 96
#define PARAMS (CLASSES * FEATURES + CLASSES) /* W row-major, then b */

/* Sample i: its features and its class. The class shifts some features, so it can be learned. */
static int sampleClass(int i) { return (i * 7) % CLASSES; }
static void sampleFeatures(int i, float* x) {
  for (int d = 0; d < FEATURES; ++d)
    x[d] = sinf(0.7f * (float)i + 1.3f * (float)d) + (d % CLASSES == sampleClass(i) ? 1.0f : 0.0f);
}

/* The initial parameters (what rank 0 makes and broadcasts). */
static void initParams(float* p) {
  for (int k = 0; k < PARAMS; ++k) p[k] = 0.1f * sinf(1.0f + (float)k);
}

/* Sum of the losses of samples [first, first+count); when grad is not NULL, adds the sum of their
 * loss gradients (with respect to every parameter) to grad. */
static float lossAndGrad(const float* p, int first, int count, float* grad) {
  float total = 0;
  for (int i = first; i < first + count; ++i) {
    float x[FEATURES], z[CLASSES], zmax = -INFINITY, sumExp = 0;
    const int y = sampleClass(i);
    sampleFeatures(i, x);
    for (int c = 0; c < CLASSES; ++c) {
      z[c] = p[CLASSES * FEATURES + c];
      for (int d = 0; d < FEATURES; ++d) z[c] += p[c * FEATURES + d] * x[d];
      zmax = z[c] > zmax ? z[c] : zmax;
    }
    for (int c = 0; c < CLASSES; ++c) sumExp += expf(z[c] - zmax);
    const float logSumExp = zmax + logf(sumExp);
    total += logSumExp - z[y]; /* -log softmax(z)[y] */
    if (grad == NULL) continue;
    for (int c = 0; c < CLASSES; ++c) {
      const float dz = expf(z[c] - logSumExp) - (c == y ? 1.0f : 0.0f);
      for (int d = 0; d < FEATURES; ++d) grad[c * FEATURES + d] += dz * x[d];
      grad[CLASSES * FEATURES + c] += dz;
    }
  }
  return total;
}

#endif /* COLLCOMM_TINY_MODEL_H_ */
