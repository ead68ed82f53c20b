"""Helpers of the memfit regression suite: oracles (onnxruntime, numpy and
PyTorch references) and builders that lit tests run as modules.

test/lit.cfg.py puts test/lib on PYTHONPATH, so a RUN line calls a helper
as `%onnx_python -m memfit_test.<module> ...` (`%mkonnx` stands for
`-m memfit_test.mkonnx`). By hand, from the source root:

  PYTHONPATH=test/lib .venv/bin/python -m memfit_test.op_numerics \\
      --memfit-run build/bin/memfit-run --only elementwise

Modules:
  mkonnx                small ONNX models from a command-line description
  op_numerics           per-op numerics of memfit-run against onnxruntime
  conformance           the ONNX backend node tests through memfit-run
  check_fixture         a fixture model's outputs against its references
  grad_check            finite-difference checks of the gradient rules
  check_grads           a fixture's gradients against PyTorch autograd
  check_training        training curves, accumulation and resume
  check_remat_grads     gradients with every remat policy against none
  check_remat_train     training with remat against training without
  compare_auto_optimal  auto's extra FLOPs against optimal's
  remat_report          the figures of a memfit-remat report
  check_timeline        a memory timeline against its memory plan
"""
