// memfit-quantize weights=...: frozen weights that only contractions read
// are quantized at compile time and dequantized just before each use.
// @w holds the first 64 values of test/models/quant_refs.npz's q4_input
// (one block of 64), so its codes are bitsandbytes' quantize_4bit codes of
// that block (q4_nf4_dq0_codes, q4_fp4_dq0_codes: the first 32 bytes).
// RUN: memfit-opt %s -split-input-file --memfit-quantize='weights=nf4 min-weight-size=1' | FileCheck %s
// RUN: memfit-opt %s -split-input-file --memfit-quantize='weights=fp4 min-weight-size=1' | FileCheck %s --check-prefix=FP4
// RUN: memfit-opt %s -split-input-file --memfit-quantize='weights=int8 min-weight-size=1 weight-block-size=16' | FileCheck %s --check-prefix=INT8
// RUN: memfit-opt %s -split-input-file --memfit-quantize='weights=nf4 double-quant=true min-weight-size=1' | FileCheck %s --check-prefix=DQ
// RUN: memfit-opt %s -split-input-file --memfit-quantize='weights=nf4' | FileCheck %s --check-prefix=SMALL
// RUN: not memfit-opt %s -split-input-file --memfit-quantize='weights=int4' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not memfit-opt %s -split-input-file --memfit-quantize='weights=int8 double-quant=true' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-DQ
// RUN: not memfit-opt %s -split-input-file --memfit-quantize='weights=nf4 weight-block-size=5' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-BLOCK

memfit.parameter @w = dense<[[0.831585168838501, 0.9181268811225891, -0.7752475142478943, -2.141268491744995, 0.894668459892273, 0.8679600358009338, 1.3950862884521484, 1.2231193780899048], [2.350219488143921, -1.025099277496338, -0.4168776273727417, 0.11371898651123047, -1.0290478467941284, 0.42451411485671997, -0.781213641166687, -0.5267610549926758], [0.2321944534778595, 0.22507213056087494, 0.8736135959625244, 2.316868782043457, 0.9359598159790039, -0.9431442618370056, 0.4980052709579468, -0.27937743067741394], [-0.7296687960624695, 0.01758062094449997, 0.530010461807251, 0.3586532473564148, -0.7116410732269287, 0.30693480372428894, -0.07220850884914398, 0.554763674736023], [-0.5093876123428345, -0.23526903986930847, -0.18867743015289307, -1.0065912008285522, -0.706123948097229, -0.8850166201591492, 1.581248164176941, -0.4918249547481537], [0.49781298637390137, 1.0184897184371948, -1.8823988437652588, 1.9782249927520752, 0.8580256700515747, -0.7538043856620789, -0.07480446994304657, -1.3429630994796753], [-0.644465982913971, -0.5724197626113892, -0.22973451018333435, -0.7141594886779785, -0.3877922594547272, -0.8422725200653076, 0.993335485458374, -1.1577880382537842], [0.4748431444168091, -0.20880615711212158, 0.901674211025238, -0.6488209366798401, -0.989631712436676, 0.027405569329857826, 0.7347927093505859, 1.5040384531021118]]> : tensor<8x8xf32>
memfit.parameter @e = dense<1.0> : tensor<8x8xf32>

func.func @main(%x: tensor<4x8xf32>, %ids: tensor<4xi64>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %w = memfit.load_parameter @w : tensor<8x8xf32>
  %e = memfit.load_parameter @e : tensor<8x8xf32>
  %g = memfit.gather %e, %ids : tensor<8x8xf32>, tensor<4xi64> -> tensor<4x8xf32>
  %y = memfit.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %t = memfit.tanh %y : tensor<4x8xf32>
  %wt = memfit.transpose %w {perm = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
  %z = memfit.matmul %t, %wt : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %s = memfit.add %z, %g : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %y, %s : tensor<4x8xf32>, tensor<4x8xf32>
}

// The codes and absmax replace @w; @e, which a gather reads, stays.
// CHECK: memfit.parameter @w.codes = dense<[188, 64, 187, 221, 243, 88, 57, 69, 136, 191, 195, 166, 71, 169, 73, 122, 86, 99, 67, 229, 172, 30, 180, 114, 68, 100, 83, 194, 150, 180, 55, 189]> : tensor<32xui8> {memfit.quantized = "weight_codes"}
// CHECK-NEXT: memfit.parameter @w.absmax = dense<2.35021949> : tensor<1xf32> {memfit.quantized = "weight_absmax"}
// CHECK-NEXT: memfit.parameter @e = dense<1.000000e+00> : tensor<8x8xf32>
// CHECK-NOT: memfit.parameter @w =
// Each use gets its own dequantize, just before it.
// CHECK: memfit.gather
// CHECK-NEXT: %[[C0:.+]] = memfit.load_parameter @w.codes : tensor<32xui8>
// CHECK-NEXT: %[[A0:.+]] = memfit.load_parameter @w.absmax : tensor<1xf32>
// CHECK-NEXT: %[[W0:.+]] = memfit.dequantize nf4 %[[C0]], %[[A0]] {block_size = 64 : i64} : (tensor<32xui8>, tensor<1xf32>) -> tensor<8x8xf32>
// CHECK-NEXT: memfit.matmul %{{.+}}, %[[W0]]
// CHECK-NEXT: memfit.tanh
// CHECK-NEXT: %[[C1:.+]] = memfit.load_parameter @w.codes
// CHECK-NEXT: %[[A1:.+]] = memfit.load_parameter @w.absmax
// CHECK-NEXT: %[[W1:.+]] = memfit.dequantize nf4 %[[C1]], %[[A1]]
// CHECK-NEXT: memfit.transpose %[[W1]]

// FP4: memfit.parameter @w.codes = dense<[68, 203, 68, 37, 61, 225, 214, 207, 102, 67, 76, 126, 193, 118, 198, 151, 254, 157, 204, 47, 117, 163, 76, 157, 255, 236, 236, 93, 110, 79, 209, 66]> : tensor<32xui8>
// FP4: memfit.dequantize fp4

// INT8: memfit.parameter @w.codes = dense<{{.+}}> : tensor<64xi8>
// INT8-NEXT: memfit.parameter @w.absmax = dense<{{.+}}> : tensor<4xf32>
// INT8: memfit.dequantize linear %{{.+}}, %{{.+}} {block_size = 16 : i64} : (tensor<64xi8>, tensor<4xf32>) -> tensor<8x8xf32>

// Double quantization: the absmax minus their mean in 8-bit codes of the
// dynamic map (blocks of 256), dequantized and shifted back before the
// weight's own dequantize.
// DQ: memfit.parameter @w.codes = dense<[188, 64, 187, 221, 243, 88, 57, 69, 136, 191, 195, 166, 71, 169, 73, 122, 86, 99, 67, 229, 172, 30, 180, 114, 68, 100, 83, 194, 150, 180, 55, 189]> : tensor<32xui8>
// DQ-NEXT: memfit.parameter @w.absmax.codes = dense<{{.+}}> : tensor<1xui8> {memfit.quantized = "weight_absmax"}
// DQ-NEXT: memfit.parameter @w.absmax.absmax = dense<{{.+}}> : tensor<1xf32>
// DQ-NEXT: memfit.parameter @w.absmax.offset = dense<2.35021949> : tensor<1xf32>
// DQ: %[[CODES:.+]] = memfit.load_parameter @w.codes
// DQ-NEXT: %[[NC:.+]] = memfit.load_parameter @w.absmax.codes
// DQ-NEXT: %[[NA:.+]] = memfit.load_parameter @w.absmax.absmax
// DQ-NEXT: %[[BACK:.+]] = memfit.dequantize dynamic %[[NC]], %[[NA]] {block_size = 256 : i64} : (tensor<1xui8>, tensor<1xf32>) -> tensor<1xf32>
// DQ-NEXT: %[[OFF:.+]] = memfit.load_parameter @w.absmax.offset
// DQ-NEXT: %[[SCALE:.+]] = memfit.add %[[BACK]], %[[OFF]]
// DQ-NEXT: memfit.dequantize nf4 %[[CODES]], %[[SCALE]]

// 64 values are under the default min-weight-size of 4096.
// SMALL-NOT: codes

// BAD: for the --weights option: unknown weight quantization 'int4'; expected none, nf4, fp4 or int8
// BAD-DQ: error: double-quant needs weights=nf4 or weights=fp4
// BAD-BLOCK: error: weight-block-size must be even and at least 2, got 5

// -----

// In a training module only frozen parameters are quantized.
// CHECK-LABEL: memfit.parameter @frozen.codes
// CHECK-SAME: memfit.quantized = "weight_codes", memfit.role = "frozen"
// CHECK: memfit.parameter @trained = dense<1.000000e+00> : tensor<8x8xf32> {memfit.role = "parameter"}
memfit.parameter @frozen = dense<2.0> : tensor<8x8xf32> {memfit.role = "frozen"}
memfit.parameter @trained = dense<1.0> : tensor<8x8xf32> {memfit.role = "parameter"}

func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %f = memfit.load_parameter @frozen : tensor<8x8xf32>
  %t = memfit.load_parameter @trained : tensor<8x8xf32>
  %y = memfit.matmul %x, %f : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %z = memfit.matmul %y, %t : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  return %z : tensor<4x8xf32>
}
