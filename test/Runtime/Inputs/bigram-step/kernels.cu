// A hand-written training step for the memfit-run --train tests: a bigram
// model (logits of the next token = the row of W of the current token) over
// the 96 tokens of memfit-run --corpus, cross-entropy, plain SGD.

// Adds the gradient of the mean cross-entropy over 2x8 positions, times
// `scale`, to `grad`; returns the loss times `scale`.
static __device__ __forceinline__ float bigram_loss(const long long* ids,
                                                    const long long* labels,
                                                    const float* w,
                                                    float* grad, float scale) {
  float total = 0.0f;
  for (int p = 0; p < 16; ++p) {
    const float* row = w + ids[p] * 96;
    float* g = grad + ids[p] * 96;
    float mx = row[0];
    for (int c = 1; c < 96; ++c)
      mx = fmaxf(mx, row[c]);
    float sum = 0.0f;
    for (int c = 0; c < 96; ++c)
      sum += expf(row[c] - mx);
    total += (logf(sum) + mx - row[labels[p]]) * scale;
    for (int c = 0; c < 96; ++c)
      g[c] += expf(row[c] - mx) / sum * scale;
    g[labels[p]] -= scale;
  }
  return total;
}

// train_step: w -= lr * grad; step += 1.
extern "C" __global__ void bigram_train_step(const long long* __restrict__ ids,
                                             const long long* __restrict__ labels,
                                             const float* __restrict__ lr,
                                             float* __restrict__ w,
                                             float* __restrict__ step,
                                             float* __restrict__ loss,
                                             float* __restrict__ grad) {
  for (int i = 0; i < 96 * 96; ++i)
    grad[i] = 0.0f;
  loss[0] = bigram_loss(ids, labels, w, grad, 1.0f / 16.0f);
  for (int i = 0; i < 96 * 96; ++i)
    w[i] -= lr[0] * grad[i];
  step[0] += 1.0f;
}

// accumulate: grad += the micro-batch's gradient.
extern "C" __global__ void bigram_accumulate(const long long* __restrict__ ids,
                                             const long long* __restrict__ labels,
                                             const float* __restrict__ w,
                                             float* __restrict__ grad,
                                             float* __restrict__ loss) {
  loss[0] = bigram_loss(ids, labels, w, grad, 1.0f / 16.0f);
}

// apply (k = 2): w -= lr * grad / 2; grad = 0; step += 1.
extern "C" __global__ void bigram_apply(const float* __restrict__ lr,
                                        float* __restrict__ w,
                                        float* __restrict__ grad,
                                        float* __restrict__ step) {
  for (int i = 0; i < 96 * 96; ++i) {
    w[i] -= lr[0] * grad[i] * 0.5f;
    grad[i] = 0.0f;
  }
  step[0] += 1.0f;
}
