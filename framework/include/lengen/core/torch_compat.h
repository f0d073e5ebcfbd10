#pragma once

// The ONLY place where differences between LibTorch 1.13 and 2.x live. Everything else in
// lengen is written against the common API and calls these helpers.

#include <torch/torch.h>

#include <optional>

#if defined(__has_include)
#if __has_include(<ATen/autocast_mode.h>)
#include <ATen/autocast_mode.h>
#define LENGEN_HAS_AUTOCAST 1
#endif
#endif

namespace lengen::compat {

/// True when this LibTorch provides at::scaled_dot_product_attention (2.0 and later).
inline constexpr bool kHasSdpa = (TORCH_VERSION_MAJOR >= 2);

/// Fused attention when available: softmax(q k^T * scale + bias) v with an optional causal
/// mask. q [B, H, T, D], k/v [B, H, S, D], bias broadcastable to [B, H, T, S] or undefined.
/// `causal_offset` is the absolute index of query row 0 (KV-cache length); causal masking
/// with an offset is only fused when offset is 0 or T == 1. Returns an undefined tensor when
/// the caller must take the explicit path.
inline torch::Tensor fused_attention(const torch::Tensor& q,
                                     const torch::Tensor& k,
                                     const torch::Tensor& v,
                                     bool causal,
                                     int64_t causal_offset,
                                     double dropout_p,
                                     double scale) {
#if TORCH_VERSION_MAJOR >= 2
  const int64_t T = q.size(2);
  if (causal && causal_offset != 0 && T != 1) {
    return {};
  }
  const bool is_causal = causal && causal_offset == 0 && T > 1;
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, dropout_p, is_causal, scale);
#else
  (void)q, (void)k, (void)v, (void)causal, (void)causal_offset, (void)dropout_p, (void)scale;
  return {};
#endif
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
