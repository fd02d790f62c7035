// Element-wise reduction kernels. Plain loops over restrict pointers so the
// compiler vectorises them (kernels.cc is built with -O3; see docs/engine.md);
// float16 and bfloat16 reduce through float. The loops are compiled twice,
// for the baseline x86-64 and for AVX2 (+ F16C for float16's conversions),
// and ReduceInto takes the AVX2 build where the CPU has it: one binary runs
// everywhere. Both give the same bits for every input but NaN payloads.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ringmaster/communicator.h"

namespace ringmaster::internal {

// inout[i] = op(inout[i], in[i]). MEAN reduces as SUM (see DivideBy).
void ReduceInto(DataType dtype, ReduceOp op, void* inout, const void* in, size_t count);

// The instruction set of the reduction loops: what ReduceInto uses, and the
// other for tests and benchmarks that compare the two.
enum class KernelIsa { kBaseline, kAvx2 };
KernelIsa ActiveKernelIsa();  // kAvx2 when the CPU has AVX2 and F16C
bool KernelIsaSupported(KernelIsa isa);
// ReduceInto with the given instruction set (which must be supported).
void ReduceIntoWith(KernelIsa isa, DataType dtype, ReduceOp op, void* inout, const void* in, size_t count);
// data[i] /= n: the last step of MEAN (integer types truncate, as TF does).
void DivideBy(DataType dtype, void* data, size_t count, int64_t n);
// Fills with the identity of `op` (0, 1, +max, -max).
void FillIdentity(DataType dtype, ReduceOp op, void* data, size_t count);

// IEEE binary16 / bfloat16 <-> float, round to nearest even.
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float BFloat16ToFloat(uint16_t b);
uint16_t FloatToBFloat16(float f);

// One element as a double, for tests and the worker's self-checks (not for
// hot loops): float16/bfloat16 round to nearest even, integers truncate.
void StoreElement(DataType dtype, void* base, size_t i, double v);
double LoadElement(DataType dtype, const void* base, size_t i);

}  // namespace ringmaster::internal
