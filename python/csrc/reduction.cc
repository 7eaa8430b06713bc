// The reduction collcomm runs for torch's ReduceOp (reduction.h).
#include "reduction.h"

#include <c10/util/Exception.h>

#include <optional>

namespace collcomm_torch {
namespace {

// collcomm's element type for a reduction on `t`, or nullopt where collcomm has none.
std::optional<ccDataType_t> reductionType(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return ccFloat32;
    case at::kDouble:
      return ccFloat64;
    case at::kHalf:
      return ccFloat16;
    case at::kBFloat16:
      return ccBfloat16;
    case at::kFloat8_e4m3fn:
      return ccFloat8e4m3;
    case at::kFloat8_e5m2:
      return ccFloat8e5m2;
    case at::kChar:
      return ccInt8;
    case at::kByte:
      return ccUint8;
    case at::kBool:
      return ccUint8;
    case at::kInt:
      return ccInt32;
    case at::kUInt32:
      return ccUint32;
    case at::kLong:
      return ccInt64;
    case at::kUInt64:
      return ccUint64;
    default:
      return std::nullopt;
  }
}

}  // namespace

void checkReduction(const at::Tensor& t, const c10d::ReduceOp& op) {
  TORCH_CHECK(reductionType(t.scalar_type()).has_value(), "collcomm cannot reduce tensors of type ", t.scalar_type(),
              " (it reduces float64/32/16, bfloat16, float8_e4m3fn, float8_e5m2, int8, uint8, int32, uint32, int64, "
              "uint64 and bool)");
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::PRODUCT:
    case c10d::ReduceOp::MIN:
    case c10d::ReduceOp::MAX:
      return;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK(t.scalar_type() != at::kBool, "collcomm: ReduceOp.AVG is not defined for bool tensors");
      return;
    case c10d::ReduceOp::PREMUL_SUM:
      TORCH_CHECK(t.scalar_type() != at::kBool, "collcomm: PREMUL_SUM is not defined for bool tensors");
      TORCH_CHECK(op.supplement_.defined(), "collcomm: PREMUL_SUM without its factor");
      return;
    default:
      TORCH_CHECK(false,
                  "collcomm has no bitwise reductions (BAND, BOR, BXOR); use SUM, PRODUCT, MIN, MAX, AVG or "
                  "PREMUL_SUM");
  }
}

std::shared_ptr<Reduction> makeReduction(ccComm_t comm, const at::Tensor& t, const c10d::ReduceOp& op) {
  auto r = std::make_shared<Reduction>();
  r->type = *reductionType(t.scalar_type());
  const bool isBool = t.scalar_type() == at::kBool;
  switch (op.op_) {
    // bool sums and products are logical OR and AND, as torch defines them.
    case c10d::ReduceOp::SUM:
      r->op = isBool ? ccMax : ccSum;
      break;
    case c10d::ReduceOp::PRODUCT:
      r->op = isBool ? ccMin : ccProd;
      break;
    case c10d::ReduceOp::MIN:
      r->op = ccMin;
      break;
    case c10d::ReduceOp::MAX:
      r->op = ccMax;
      break;
    case c10d::ReduceOp::AVG:
      r->op = ccAvg;
      break;
    case c10d::ReduceOp::PREMUL_SUM: {
      auto* supplement = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(supplement != nullptr, "collcomm: PREMUL_SUM with an unknown factor kind");
      ccRedOp_t made;
      ccResult_t res;
      if (supplement->tensor_factor.defined() && t.is_cuda()) {
        // A factor given as a tensor is read by the kernel when it runs (ccScalarDevice), so it may be
        // computed by work still queued on the GPU; a copy made here (on the group's stream) is
        // one the caller cannot free or overwrite before then.
        r->factor = supplement->tensor_factor.to(t.device(), t.scalar_type(), /*non_blocking=*/false, /*copy=*/true)
                        .reshape({1})
                        .contiguous();
        res = ccRedOpCreatePreMulSum(&made, r->factor.data_ptr(), r->type, ccScalarDevice, comm);
      } else {
        // The factor in the tensor's own type, in host memory, read by collcomm when the op is made.
        at::Tensor factor = supplement->tensor_factor.defined()
                                ? supplement->tensor_factor.to(at::kCPU, t.scalar_type()).reshape({1}).contiguous()
                                : at::full({1}, supplement->double_factor, at::TensorOptions().dtype(t.scalar_type()));
        res = ccRedOpCreatePreMulSum(&made, factor.data_ptr(), r->type, ccScalarHostImmediate, comm);
      }
      TORCH_CHECK(res == ccSuccess, "collcomm: ccRedOpCreatePreMulSum failed: ", ccGetLastError(comm));
      r->op = made;
      r->comm = comm;
      r->owned = true;
      break;
    }
    default:
      TORCH_CHECK(false, "collcomm: unsupported reduction");
  }
  return r;
}

}  // namespace collcomm_torch
