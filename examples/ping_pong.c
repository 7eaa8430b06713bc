/*
 * ping_pong: point-to-point with ccSend/ccRecv. Rank 0 sends a float16 tensor of 2048 elements to
 * rank 1, which checks it and sends it back; rank 0 checks what came back. Both print the largest
 * and the mean difference from the tensor sent — 0, since the bytes travel unchanged.
 *
 *   ping_pong [-t 2]            ranks as threads of this process
 *   ccrun -n 2 ping_pong        ranks as processes (also mpirun -n 2 ping_pong)
 *
 * ccFloat16 is IEEE-754 binary16. C11 has no such type, so the tensor is carried as uint16_t bits
 * and converted with the two functions below. Ranks above 1, if any, take no part.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "example_ranks.h"

#define COUNT 2048

/* float -> binary16 bits, rounding to nearest even (as a GPU's conversion does). */
static uint16_t halfFromFloat(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof(x));
  const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return sign | (abs > 0x7f800000u ? 0x7e00 : 0x7c00); /* NaN, infinity */
  if (abs >= 0x477ff000u) return sign | 0x7c00;                                /* rounds past 65504 */
  if (abs < 0x38800000u) {                                                     /* subnormal or zero */
    float a;
    memcpy(&a, &abs, sizeof(a));
    return sign | (uint16_t)lrintf(a * 16777216.0f); /* in units of 2^-24 */
  }
  const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return sign | (uint16_t)((rounded - 0x38000000u) >> 13); /* rebias the exponent: 127 -> 15 */
}

static float floatFromHalf(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float mag = exponent == 0    ? ldexpf((float)mantissa, -24)
              : exponent == 31 ? (mantissa != 0 ? NAN : INFINITY)
                               : ldexpf((float)(mantissa | 0x400), exponent - 25);
  return (h & 0x8000) ? -mag : mag;
}

/* The tensor rank 0 sends: a wave, rounded to float16. Every rank can make it to check against. */
static void makeTensor(uint16_t* t) {
  for (int i = 0; i < COUNT; ++i) t[i] = halfFromFloat(1000.0f * sinf(0.01f * (float)i));
}

/* Prints and returns the number of elements that differ from the tensor sent. */
static int compare(int rank, const char* what, const uint16_t* got, const uint16_t* want) {
  double maxErr = 0, sumErr = 0;
  int wrong = 0;
  for (int i = 0; i < COUNT; ++i) {
    const double err = fabs((double)floatFromHalf(got[i]) - (double)floatFromHalf(want[i]));
    if (err > maxErr) maxErr = err;
    sumErr += err;
    wrong += got[i] != want[i];
  }
  examplePrintf(rank, "%s %d float16 values: max error %g, mean error %g%s\n", what, COUNT, maxErr, sumErr / COUNT,
                wrong ? " -- WRONG" : "");
  return wrong;
}

static int pingPong(int rank, int nranks, ccComm_t comm) {
  (void)nranks;
  uint16_t sent[COUNT], buf[COUNT];
  makeTensor(sent);
  if (rank == 0) {
    EXAMPLE_CHECK(rank, comm, ccSend(sent, COUNT, ccFloat16, 1, comm, NULL));
    memset(buf, 0, sizeof(buf));
    EXAMPLE_CHECK(rank, comm, ccRecv(buf, COUNT, ccFloat16, 1, comm, NULL));
    return compare(rank, "round trip 0 -> 1 -> 0 of", buf, sent) != 0;
  }
  if (rank == 1) {
    EXAMPLE_CHECK(rank, comm, ccRecv(buf, COUNT, ccFloat16, 0, comm, NULL));
    const int wrong = compare(rank, "received from rank 0", buf, sent);
    EXAMPLE_CHECK(rank, comm, ccSend(buf, COUNT, ccFloat16, 0, comm, NULL));
    return wrong != 0;
  }
  return 0;
}

int main(int argc, char** argv) { return exampleRun(argc, argv, "ping_pong", 2, 2, pingPong); }
