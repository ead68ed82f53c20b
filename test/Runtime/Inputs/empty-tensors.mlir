// Input of ../empty-tensors.test.
func.func @main(%x: tensor<0x4xf32>, %z: tensor<4xf32>, %y: tensor<3x0xi32>) -> (tensor<0x4xf32>, tensor<4xf32>, tensor<3x1xi32>, tensor<3x1xi32>) {
  %0 = memfit.exp %x : tensor<0x4xf32>
  %2 = memfit.exp %z : tensor<4xf32>
  %3 = memfit.reduce_mean %y {axes = array<i64: 1>} : tensor<3x0xi32> -> tensor<3x1xi32>
  %4 = memfit.reduce_max %y {axes = array<i64: 1>} : tensor<3x0xi32> -> tensor<3x1xi32>
  return %0, %2, %3, %4 : tensor<0x4xf32>, tensor<4xf32>, tensor<3x1xi32>, tensor<3x1xi32>
}
