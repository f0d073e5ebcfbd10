#pragma once

// The ONLY place where differences between LibTorch 1.13 and 2.x live. Everything else in
// lengen is written against the common API and calls these helpers.

#include <torch/torch.h>

#include <optional>
#include <vector>

#if defined(__has_include)
#if __has_include(<ATen/autocast_mode.h>)
#include <ATen/autocast_mode.h>
#define LENGEN_HAS_AUTOCAST 1
#endif
#endif

#if defined(__has_include)
#if __has_include(<ATen/ops/_fused_rms_norm.h>)
#define LENGEN_HAS_FUSED_RMS_NORM 1
#endif
#endif

namespace lengen::compat {

/// RMSNorm over the last dimension, x * rsqrt(mean(x^2) + eps) * weight, in PyTorch's fused
/// CUDA kernel (one kernel forward, one backward) where this LibTorch has one: CUDA tensors
/// and a LibTorch with `_fused_rms_norm`, which `rms_norm` calls. Returns an undefined tensor
/// elsewhere: the caller computes it (NormImpl).
inline torch::Tensor fused_rms_norm(const torch::Tensor& x,
                                    const torch::Tensor& weight,
                                    double eps) {
#ifdef LENGEN_HAS_FUSED_RMS_NORM
  if (x.is_cuda()) {
    return at::rms_norm(x, {x.size(-1)}, weight, eps);
  }
#endif
  (void)x, (void)weight, (void)eps;
  return {};
}

/// True when this LibTorch provides at::scaled_dot_product_attention (2.0 and later).
inline constexpr bool kHasSdpa = (TORCH_VERSION_MAJOR >= 2);

/// Fused attention when available (LibTorch 2.x): softmax(q k^T * scale + mask) v, with
/// PyTorch's own causal mask when `is_causal`. q [B, H, T, D], k/v [B, H, S, D]; attn_mask
/// undefined, additive (q's dtype, -inf where masked) or bool (true where a key may be
/// seen), broadcastable to [B, H, T, S]. With a mask PyTorch picks the memory-efficient
/// kernel on CUDA, without one the flash kernel. Returns an undefined tensor on LibTorch 1.x:
/// the caller takes the explicit path.
inline torch::Tensor fused_attention(const torch::Tensor& q,
                                     const torch::Tensor& k,
                                     const torch::Tensor& v,
                                     const torch::Tensor& attn_mask,
                                     bool is_causal,
                                     double dropout_p,
                                     double scale) {
#if TORCH_VERSION_MAJOR >= 2
  // An undefined tensor must reach the kernel as "no mask" (nullopt), not as a mask.
  const auto mask = attn_mask.defined() ? std::optional<at::Tensor>(attn_mask) : std::nullopt;
  return at::scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal, scale);
#else
  (void)q, (void)k, (void)v, (void)attn_mask, (void)is_causal, (void)dropout_p, (void)scale;
  return {};
#endif
}

/// Multiplies every tensor of `tensors` in place by `scale`, a 0-dim tensor on their device
/// (read there, not on the host): one multi-tensor call where LibTorch has the overload (2.1
/// and later), else one call per tensor. The same arithmetic either way: a 0-dim operand is
/// converted to the tensors' type in both, and is converted here first because CUDA's
/// multi-tensor kernel needs the types to match (else it loops over the tensors).
inline void foreach_mul_(const std::vector<torch::Tensor>& tensors, const torch::Tensor& scale) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  if (tensors.empty()) {
    return;
  }
  at::_foreach_mul_(tensors, scale.to(tensors[0].scalar_type()));
#else
  for (const auto& t : tensors) {
    t.mul_(scale);
  }
#endif
}

/// One fused Adam (decoupled: AdamW) update of every parameter, its moments updated in place,
/// with Adam's 1-based step count read from `count` (a 0-dim float32 tensor on the parameters'
/// device: the kernel reads it, never writes it) and the learning rate `lr` either fixed in the
/// call (a double) or read from a 0-dim float32 tensor on the device. Returns false (nothing
/// done) where LibTorch has no fused update (before 2.4).
template <class Lr>
inline bool fused_adam_with(const std::vector<torch::Tensor>& params,
                            const std::vector<torch::Tensor>& grads,
                            const std::vector<torch::Tensor>& exp_avg,
                            const std::vector<torch::Tensor>& exp_avg_sq,
                            const torch::Tensor& count,
                            const Lr& lr,
                            double beta1,
                            double beta2,
                            double weight_decay,
                            double eps,
                            bool decoupled) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  const std::vector<torch::Tensor> steps(params.size(), count);
  if (decoupled) {
    at::_fused_adamw_(params,
                      grads,
                      exp_avg,
                      exp_avg_sq,
                      /*max_exp_avg_sqs=*/{},
                      steps,
                      lr,
                      beta1,
                      beta2,
                      weight_decay,
                      eps,
                      /*amsgrad=*/false,
                      /*maximize=*/false);
  } else {
    at::_fused_adam_(params,
                     grads,
                     exp_avg,
                     exp_avg_sq,
                     /*max_exp_avg_sqs=*/{},
                     steps,
                     lr,
                     beta1,
                     beta2,
                     weight_decay,
                     eps,
                     /*amsgrad=*/false,
                     /*maximize=*/false);
  }
  return true;
#else
  (void)params, (void)grads, (void)exp_avg, (void)exp_avg_sq, (void)count, (void)lr, (void)beta1,
      (void)beta2, (void)weight_decay, (void)eps, (void)decoupled;
  return false;
#endif
}

/// fused_adam_with at step `step` with a learning rate fixed in the call: the same arithmetic
/// as the multi-tensor update, in one kernel per group of tensors, on the CPU as on CUDA.
inline bool fused_adam(const std::vector<torch::Tensor>& params,
                       const std::vector<torch::Tensor>& grads,
                       const std::vector<torch::Tensor>& exp_avg,
                       const std::vector<torch::Tensor>& exp_avg_sq,
                       int64_t step,
                       double lr,
                       double beta1,
                       double beta2,
                       double weight_decay,
                       double eps,
                       bool decoupled) {
  if (params.empty()) {
    return true;
  }
  const auto count =
      torch::full({}, static_cast<double>(step), params[0].options().dtype(torch::kFloat32));
  return fused_adam_with(
      params, grads, exp_avg, exp_avg_sq, count, lr, beta1, beta2, weight_decay, eps, decoupled);
}

/// fused_adam_with with the learning rate read from a tensor, which a CUDA graph can replay with
/// new values. Used on CUDA only (false elsewhere): the CPU takes the per-tensor form.
inline bool fused_adam_on_device(const std::vector<torch::Tensor>& params,
                                 const std::vector<torch::Tensor>& grads,
                                 const std::vector<torch::Tensor>& exp_avg,
                                 const std::vector<torch::Tensor>& exp_avg_sq,
                                 const torch::Tensor& count,
                                 const torch::Tensor& lr,
                                 double beta1,
                                 double beta2,
                                 double weight_decay,
                                 double eps,
                                 bool decoupled) {
  if (params.empty() || !params[0].is_cuda()) {
    return false;
  }
  return fused_adam_with(
      params, grads, exp_avg, exp_avg_sq, count, lr, beta1, beta2, weight_decay, eps, decoupled);
}

/// RAII bfloat16 autocast on CUDA (no-op when autocast is unavailable or `enabled` false).
class CudaAutocast {
 public:
  explicit CudaAutocast(bool enabled) : enabled_(enabled) {
#ifdef LENGEN_HAS_AUTOCAST
    if (enabled_) {
#if TORCH_VERSION_MAJOR >= 2
      prev_enabled_ = at::autocast::is_autocast_enabled(at::kCUDA);
      at::autocast::set_autocast_enabled(at::kCUDA, true);
      at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
#else
      prev_enabled_ = at::autocast::is_enabled();
      at::autocast::set_enabled(true);
      at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
#endif
    }
#endif
  }

  ~CudaAutocast() {
#ifdef LENGEN_HAS_AUTOCAST
    if (enabled_) {
      at::autocast::clear_cache();
#if TORCH_VERSION_MAJOR >= 2
      at::autocast::set_autocast_enabled(at::kCUDA, prev_enabled_);
#else
      at::autocast::set_enabled(prev_enabled_);
#endif
    }
#endif
  }

  CudaAutocast(const CudaAutocast&) = delete;
  CudaAutocast& operator=(const CudaAutocast&) = delete;

 private:
  bool enabled_;
  bool prev_enabled_ = false;
};

}  // namespace lengen::compat
