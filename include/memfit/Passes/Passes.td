//===- Passes.td - memfit passes ---------------------------*- tablegen -*-===//

#ifndef MEMFIT_PASSES_TD
#define MEMFIT_PASSES_TD

include "mlir/Pass/PassBase.td"

def MemfitModelSummaryPass : Pass<"memfit-model-summary", "::mlir::ModuleOp"> {
  let summary = "Prints a model's parameters, bytes by element type and op counts";
  let description = [{
    Prints a summary of the module to standard output (or `output`): the
    number of parameters and parameter tensors, the bytes that parameters
    and constants take by element type, the functions' inputs and outputs,
    and op counts by computation class (from the OpClassInterface) and by op
    name. The IR is left unchanged.

    ```
    memfit-opt gpt.onnx --input-shape=input_ids=2x16 --memfit-model-summary -o /dev/null
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the summary ('-' for standard output)">,
  ];
}

def MemfitFormKernelsPass : Pass<"memfit-form-kernels", "::mlir::func::FuncOp"> {
  let summary = "Wraps every op that needs generated code in a memfit.kernel";
  let description = [{
    Lowers a function to its kernels: each element-wise, normalization,
    reduction, loss and data-movement op (and `memfit.range`) moves into a
    `memfit.kernel` of its own whose inputs are the op's distinct operands.
    Contractions (`memfit.matmul`, `memfit.gemm`) stay outside: they become
    library calls (cuBLASLt, or a BLAS on the host). Views that only change
    the shape of a contiguous buffer (`reshape`, `flatten`, `squeeze`,
    `unsqueeze`) stay outside too and cost no memory or time. Splat
    constants (one value repeated) used by element-wise and data-movement
    ops are cloned into their kernels, where they become literals, instead
    of taking a buffer; row, reduction and loss ops read them as buffers.

    One op per kernel is the starting point; fusion merges kernels.

    ```
    memfit-opt model.onnx --input-shape=batch=2,seq=16 --memfit-form-kernels
    ```
  }];
  let dependentDialects = ["::mlir::memfit::MemfitDialect"];
}

def MemfitMemoryPlanPass : Pass<"memfit-memory-plan", "::mlir::ModuleOp"> {
  let summary = "Prints the schedule and arena plan of each function";
  let description = [{
    Runs the memory planner on every function whose ops have been formed
    into kernels (run `memfit-form-kernels` first) and prints the plan: the
    weights region (parameters and constants), the arena's peak bytes, the
    bytes by category (inputs, outputs, activations) and, with `buffers`,
    one line per buffer with its region, offset, size and live range in
    steps. The schedule is the function's op order; buffers are placed by
    the greedy-by-size first-fit algorithm on their live ranges, aligned to
    256 bytes; views share their source's buffer. The IR is left unchanged;
    the CUDA emitter uses the same plan.

    ```
    memfit-opt model.onnx --memfit-form-kernels --memfit-memory-plan=buffers=true
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the plan ('-' for standard output)">,
    Option<"buffers", "buffers", "bool", /*default=*/"false",
           "List every buffer, not only the totals">,
  ];
}

#endif // MEMFIT_PASSES_TD
