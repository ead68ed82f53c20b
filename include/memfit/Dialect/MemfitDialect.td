//===- MemfitDialect.td - the memfit dialect ---------------*- tablegen -*-===//

#ifndef MEMFIT_DIALECT_MEMFITDIALECT_TD
#define MEMFIT_DIALECT_MEMFITDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "memfit/Dialect/MemfitInterfaces.td"

def Memfit_Dialect : Dialect {
  let name = "memfit";
  let cppNamespace = "::mlir::memfit";
  let summary = "Tensor ops of transformer training graphs, with ONNX semantics";
  let description = [{
    The `memfit` dialect holds the tensor programs that memfit compiles: the
    forward pass imported from ONNX and, later, the training step built from
    it. Ops follow the semantics of their ONNX counterparts (numpy-style
    broadcasting, negative axes counted from the back) on statically shaped
    tensors; shapes are inferred by one set of functions shared by the
    verifiers, the builders and the ONNX importer.

    Attributes are kept in the attribute dictionary rather than in inherent
    properties so that the importer can infer result types from a plain
    attribute dictionary before it builds an op, and report a failed inference
    as a diagnostic on the ONNX node instead of aborting.
  }];
  let usePropertiesForAttributes = 0;
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Memfit_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "approximation used by gelu", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Tanh", 1, "tanh">]> {
  let cppNamespace = "::mlir::memfit";
}

def Memfit_LossReduction : I32EnumAttr<"LossReduction",
    "how a loss reduces its per-element values", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Sum", 1, "sum">,
      I32EnumAttrCase<"Mean", 2, "mean">]> {
  let cppNamespace = "::mlir::memfit";
}

def Memfit_CollectiveReduction : I32EnumAttr<"CollectiveReduction",
    "how a collective combines the ranks' tensors", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Mean", 1, "mean">,
      I32EnumAttrCase<"Max", 2, "max">,
      I32EnumAttrCase<"Min", 3, "min">]> {
  let cppNamespace = "::mlir::memfit";
}

def Memfit_QuantScheme : I32EnumAttr<"QuantScheme",
    "how a quantized tensor's codes map to values", [
      I32EnumAttrCase<"Linear", 0, "linear">,
      I32EnumAttrCase<"Dynamic", 1, "dynamic">,
      I32EnumAttrCase<"DynamicUnsigned", 2, "dynamic_unsigned">,
      I32EnumAttrCase<"NF4", 3, "nf4">,
      I32EnumAttrCase<"FP4", 4, "fp4">]> {
  let cppNamespace = "::mlir::memfit";
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// The element types memfit holds are the ONNX types the importer maps
// (TensorLoader.cpp) and the CUDA emitter stores (lib/Target/Cuda/
// ElementTypes.h); every tensor operand and result is one of them, so no
// pass, folder or emitter meets another (an index, an i128, a complex). Each
// op narrows its operands and results to what its folder, shape inference,
// gradient rule and kernel handle; what ODS cannot say (the element types of
// optional or variadic operands, quantized codes by scheme, a cast's free
// change of type) its verifier checks, with verifyElementTypes of
// lib/Dialect/Ops/OpHelpers.h where operands must agree.

// The floats kernels compute in (f16 and bf16 in float registers).
def Memfit_FloatElt : AnyTypeOf<[F16, BF16, F32, F64]>;
// ONNX's 8-bit floats and FLOAT4E2M1: stored as bits in a byte, cast and
// moved, never computed on.
def Memfit_SmallFloatElt : AnyTypeOf<[F8E4M3FN, F8E4M3FNUZ, F8E5M2,
                                      F8E5M2FNUZ, F4E2M1FN],
                                     "8- or 4-bit float">;
// Integers, signed (signless) or unsigned, not booleans: ONNX's widths.
def Memfit_IntElt : AnyTypeOf<[I<2>, I<4>, I8, I16, I32, I64,
                               UI<2>, UI<4>, UI8, UI16, UI32, UI64],
                              "2-, 4-, 8-, 16-, 32- or 64-bit integer">;
def Memfit_IndexElt : AnyTypeOf<[I32, I64]>;
def Memfit_AnyElt : AnyTypeOf<[Memfit_FloatElt, Memfit_SmallFloatElt,
                               Memfit_IntElt, I1]>;

def Memfit_Tensor : StaticShapeTensorOf<[Memfit_AnyElt]>;
def Memfit_FloatTensor : StaticShapeTensorOf<[Memfit_FloatElt]>;
// Arithmetic and ordering: floats and integers, not booleans.
def Memfit_NumericTensor : StaticShapeTensorOf<[Memfit_FloatElt, Memfit_IntElt]>;
def Memfit_BoolTensor : StaticShapeTensorOf<[I1]>;
def Memfit_IndexTensor : StaticShapeTensorOf<[Memfit_IndexElt]>;

// A weight's or constant's elements, of an element type of Memfit_AnyElt.
def Memfit_ElementsAttr : ElementsAttrBase<
    And<[CPred<"::llvm::isa<::mlir::ElementsAttr>($_self)">,
         SubstLeaves<"$_self",
                     "::llvm::cast<::mlir::ElementsAttr>($_self).getElementType()",
                     Memfit_AnyElt.predicate>]>,
    !strconcat("elements attribute of ", Memfit_AnyElt.summary)>;

//===----------------------------------------------------------------------===//
// Traits (C++ in MemfitTraits.h)
//===----------------------------------------------------------------------===//

class Memfit_OpTrait<string name> : NativeOpTrait<name> {
  let cppNamespace = "::mlir::OpTrait::memfit";
}

// The op runs no code and moves no bytes: weights and constants sit in the
// weights region, an assign is planned in place, a view shares its source's
// buffer. Queried by isFreeOp.
def Memfit_RunsNothing : Memfit_OpTrait<"RunsNothing">;

// The op only reinterprets the shape of a contiguous buffer: no kernel, no
// buffer of its own (the memory plan gives the result its operand's
// buffer). Queried by isBufferView.
def Memfit_BufferViewTrait : Memfit_OpTrait<"BufferView">;
def Memfit_BufferView : TraitList<[Memfit_RunsNothing, Memfit_BufferViewTrait]>;

// The op's kernel reads every operand from a buffer even though the op is
// element-wise or data movement, so a splat constant operand cannot become
// a literal in it (split writes several results from one input). Queried
// by kernelTakesLiterals.
def Memfit_KernelReadsBuffers : Memfit_OpTrait<"KernelReadsBuffers">;

// The op computes each element of its result from its index alone: it
// reads its operands at indices mapped from the result's (a transpose, a
// slice, a gather, a concatenation) or computes the value from the index
// (range). A pointwise kernel composes such ops with element-wise ones at
// its own index; memfit-fuse merges kernels by it and the CUDA emitter
// writes the ops of this trait in its IndexMapping style. Queried by
// isIndexMapping.
def Memfit_IndexMapping : Memfit_OpTrait<"IndexMapping">;

// The op reads indices that its operands decide at run time (a gather's or
// a scatter's): its kernel checks each against the axis it indexes and
// records the first out of range in the executable's index-error word,
// which the memory plan reserves in the weights region when some op of the
// module has this trait (docs/robustness.md). Queried by checksIndices.
def Memfit_ChecksIndices : Memfit_OpTrait<"ChecksIndices">;

//===----------------------------------------------------------------------===//
// Base op classes
//===----------------------------------------------------------------------===//

// Every memfit op states its computation class; `opClass` names a case of
// OpClass. Every op has a cost, by default the class-based model of
// defaultOpCost with the op's `flopsPerElement` (see CostOpInterface); ops
// with a formula of their own also list
// DeclareOpInterfaceMethods<Memfit_CostOpInterface, ["getCost"]>. Ops put
// their own C++ declarations in `extraDecls`.
class Memfit_Op<string mnemonic, string opClass, list<Trait> traits = []>
    : Op<Memfit_Dialect, mnemonic,
         !listconcat([Memfit_OpClassInterface, Memfit_CostOpInterface],
                     traits)> {
  code extraDecls = "";
  int flopsPerElement = 1;
  // The precision requirement (OpClassInterface): "Low", "Fp32" or
  // "Follow"; empty for the class's default; "Custom" when the op defines
  // getPrecision() itself (in extraDecls and its family's .cpp).
  string precision = "";
  let extraClassDeclaration = [{
    ::mlir::memfit::OpClass getOpClass() {
      return ::mlir::memfit::OpClass::}] # opClass # [{;
    }
    int64_t getFlopsPerElement() { return }] # flopsPerElement # [{; }
  }] # !if(!eq(precision, "Custom"), "", [{
    ::mlir::memfit::Precision getPrecision() {
      return }] # !if(!empty(precision),
        "::mlir::memfit::defaultPrecision(getOpClass())",
        "::mlir::memfit::Precision::" # precision) # [{;
    }
  }]) # extraDecls;
}

#endif // MEMFIT_DIALECT_MEMFITDIALECT_TD
