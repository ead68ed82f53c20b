// Round trip of the collectives and their costs: bytes on the wire for ring
// algorithms (all-reduce 2 (N-1)/N of the tensor, reduce-scatter and
// all-gather (N-1)/N of the whole, broadcast the whole).
// RUN: memfit-opt %s | FileCheck %s
// RUN: memfit-opt %s -mlir-print-op-generic | memfit-opt | FileCheck %s
// RUN: memfit-opt %s -verify-roundtrip -o /dev/null
// RUN: memfit-opt %s --memfit-op-cost -o /dev/null | FileCheck %s --check-prefix=COST

// CHECK-LABEL: func.func @collectives
// CHECK: memfit.all_reduce mean %{{.+}} {group_size = 4 : i64} : tensor<32x96xf32> -> tensor<32x96xf32>
// CHECK: memfit.reduce_scatter sum %{{.+}} {group_size = 4 : i64} : tensor<3072xf32> -> tensor<768xf32>
// CHECK: memfit.all_gather %{{.+}} {group_size = 4 : i64} : tensor<768xf32> -> tensor<3072xf32>
// CHECK: memfit.broadcast %{{.+}} {group_size = 2 : i64, ranks = array<i64: 0, 2>, root = 1 : i64} : tensor<8xbf16> -> tensor<8xbf16>
// CHECK: memfit.all_reduce max %{{.+}} {group_size = 4 : i64} : tensor<i64> -> tensor<i64>
// 32 x 96 f32 = 12,288 bytes: 2 * 3/4 of it is 18,432 on the wire; 3 of
// 4 ranks' values added per element.
// COST-LABEL: function @collectives
// COST: op=memfit.all_reduce {{.*}} class=collective flops=9216 bytes=24576
// COST-NEXT: wire=18432
// 3072 f32 = 12,288 bytes: 3/4 of it.
// COST: op=memfit.reduce_scatter {{.*}} class=collective flops=9216 bytes=15360
// COST-NEXT: wire=9216
// COST: op=memfit.all_gather {{.*}} class=collective flops=0 bytes=15360
// COST-NEXT: wire=9216
// COST: op=memfit.broadcast {{.*}} class=collective flops=0 bytes=32
// COST-NEXT: wire=16
// COST: op=memfit.all_reduce {{.*}} class=collective flops=3 bytes=16
// COST-NEXT: wire=12
func.func @collectives(%g: tensor<32x96xf32>, %flat: tensor<3072xf32>, %w: tensor<8xbf16>, %n: tensor<i64>)
    -> (tensor<32x96xf32>, tensor<3072xf32>, tensor<8xbf16>, tensor<i64>) {
  %0 = memfit.all_reduce mean %g {group_size = 4} : tensor<32x96xf32> -> tensor<32x96xf32>
  %1 = memfit.reduce_scatter sum %flat {group_size = 4} : tensor<3072xf32> -> tensor<768xf32>
  %2 = memfit.all_gather %1 {group_size = 4} : tensor<768xf32> -> tensor<3072xf32>
  %3 = memfit.broadcast %w {group_size = 2, root = 1, ranks = array<i64: 0, 2>} : tensor<8xbf16> -> tensor<8xbf16>
  %4 = memfit.all_reduce max %n {group_size = 4} : tensor<i64> -> tensor<i64>
  return %0, %2, %3, %4 : tensor<32x96xf32>, tensor<3072xf32>, tensor<8xbf16>, tensor<i64>
}
