// Buffer contents with exactly known results: writes the values a Collective's segments describe
// and counts the elements that differ from them. Values come from tests/support/exact_data.h, so
// a reduction's result is exact whatever order the library reduces in (integers, powers of two);
// only floating AVG is compared with a tolerance. Control tier: runs on check iterations only,
// one thread per rank over that rank's buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collcomm.h"
#include "common/collective.h"

namespace collcomm::perf {

// Writes a value no generator produces (signed integers: the minimum; unsigned: all ones;
// floating types: a NaN) over n elements, so an element the library never wrote is caught.
void poison(ccDataType_t type, void* buf, size_t n);

// Writes the segments' values. exactOp: the op the inputs are for (exact_data.h's numbering).
// seed shifts every generator index, so each check iteration sees different data.
void writeSegments(ccDataType_t type, int exactOp, uint64_t seed, void* base, const std::vector<Segment>& segs);

// Elements in the segments that differ from their expected value; the first one is described in
// *first (if not null and empty).
int64_t countWrong(ccDataType_t type, int exactOp, int nranks, uint64_t seed, const void* base,
                   const std::vector<Segment>& segs, std::string* first);

// The PreMulSum scalar the inputs assume, stored as one element of `type` in *scalar (8 bytes).
void preMulScalar(ccDataType_t type, uint64_t* scalar);

}  // namespace collcomm::perf
