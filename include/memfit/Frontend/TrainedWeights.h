//===- TrainedWeights.h - trained parameters in and out ----------*- C++ -*-===//
//
// A session's trained parameters as files users take elsewhere: every
// trainable parameter, or the LoRA adapters with PEFT's names, as
// safetensors; the source ONNX model with the trained weights (LoRA
// merged); and adapters loaded back from safetensors (PEFT's or memfit's
// names). What memfit-run's --export* and --load-adapters do.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_FRONTEND_TRAINEDWEIGHTS_H
#define MEMFIT_FRONTEND_TRAINEDWEIGHTS_H

#include "memfit/runtime/Session.h"
#include "memfit/runtime/Status.h"

#include <functional>
#include <string>

namespace memfit::frontend {

/// Where an export reads a parameter's value; null: the session's variable.
/// Under ZeRO stage 3 a rank holds rows of each parameter, and memfit-run
/// passes the whole ones it gathered from every rank.
using ParameterReader =
    std::function<rt::StatusOr<rt::Tensor>(const std::string &name)>;

/// Writes the trainable parameters (only the LoRA adapters, with PEFT's
/// names, when `adaptersOnly`) to a safetensors file; an error when there
/// are none.
rt::Status exportParameters(const rt::Session &session, const std::string &path,
                            bool adaptersOnly,
                            const ParameterReader &read = nullptr);

/// Writes `sourceModel` (the ONNX file the session was compiled from) with
/// the session's trained parameters to `path`, LoRA adapters merged into
/// their base weights; `externalData` puts the weights in a side file even
/// for a small model.
rt::Status exportModel(const rt::Session &session,
                       const std::string &sourceModel, const std::string &path,
                       bool externalData,
                       const ParameterReader &read = nullptr);

/// Sets trainable parameters from a safetensors file, after checking every
/// tensor's name, type and shape (so that on error nothing changed).
rt::Status loadParameters(rt::Session &session, const std::string &path);

} // namespace memfit::frontend

#endif // MEMFIT_FRONTEND_TRAINEDWEIGHTS_H
