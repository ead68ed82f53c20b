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

#endif // MEMFIT_PASSES_TD
