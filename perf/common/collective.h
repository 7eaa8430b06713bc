// What a perf binary says about its collective, and nothing else: the call, its buffer shapes,
// its bus-bandwidth factor, and which values its inputs and outputs hold. The harness
// (runner.cc) does the rest. Each perf/<collective>.cc fills one Collective.
//
// Shapes follow nccl-tests: a sweep size of S bytes is count = S / sizeof(type) elements, which
// each collective turns into the count argument of its call and the element counts of the two
// buffers. The row's size column is the larger buffer, and algbw = that size / time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collcomm.h"

namespace collcomm::perf {

// Element counts for one call (nccl-tests' getCollByteCount).
struct Counts {
  size_t send = 0;   // elements the send buffer holds
  size_t recv = 0;   // elements the receive buffer holds
  size_t param = 0;  // the call's count argument
  // In place, rank r's send pointer is recvbuff + sendInPlace*r and its receive pointer is
  // recvbuff + recvInPlace*r (elements) — NCCL's in-place rule for this collective.
  size_t sendInPlace = 0;
  size_t recvInPlace = 0;
};

// Which value a stretch of elements holds. Values come from tests/support/exact_data.h:
//   kReduceInput: rank's input to the reduction (inputValue(op, type, rank, index))
//   kReduced:     the exact reduction of every rank's kReduceInput at index
//   kCopy:        a value a copying collective moves unchanged from `rank` (index-dependent)
//   kUntouched:   the poison the harness wrote before the call: the library must not write here
enum class ValueKind { kReduceInput, kReduced, kCopy, kUntouched };

struct Segment {
  size_t offset;  // elements from the start of the buffer described
  size_t length;  // elements
  ValueKind kind;
  int rank;           // whose input (kReduceInput, kCopy)
  size_t firstIndex;  // generator index of the first element (plus the check iteration's seed)
};

// One rank's view of one call, for the fill/expect functions.
struct Shape {
  int rank;
  int nranks;
  int root;  // -1 for collectives without one
  size_t param;
  bool inPlace;
};

struct Collective {
  const char* name;     // "AllReduce", as the library names it
  const char* program;  // "all_reduce_perf"
  bool reduces;         // rows show the reduction op (else "none")
  bool rooted;          // rows show the root (else -1)
  bool checksInPlace;   // false: the in-place result is not defined (nccl-tests prints N/A)
  Counts (*counts)(size_t count, int nranks);
  double (*busFactor)(int nranks);  // busbw = algbw * busFactor
  // stream: the rank's CUDA stream under --gpu (the call only enqueues); null on host ranks.
  ccResult_t (*run)(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t type, ccRedOp_t op, int root,
                    ccComm_t comm, ccStream_t stream);
  // What this rank writes before the call, relative to the pointer it passes as sendbuff.
  void (*inputs)(const Shape& s, std::vector<Segment>* out);
  // What the rank's output must hold after the call, relative to the pointer it passes as recvbuff
  // (in place: recvbuff + recvInPlace*rank). Elements not listed are not checked.
  void (*expected)(const Shape& s, std::vector<Segment>* out);
};

// Entry point shared by every binary: parses argv, runs the sweep, prints, returns the exit status.
int perfMain(int argc, char** argv, const Collective& coll);

}  // namespace collcomm::perf
