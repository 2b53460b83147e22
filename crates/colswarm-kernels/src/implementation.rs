//! Choosing between the reference and the fused implementation of an op.

use burn::backend::DispatchDevice;
use burn::tensor::{DType, Device};

/// Which implementation of a kernel op ([`wkv7_with`](crate::wkv7_with),
/// [`fuse_states_with`](crate::fuse_states_with)) to run.
///
/// The plain entry points ([`wkv7`](crate::wkv7()), [`fuse_states`](crate::fuse_states())) use
/// [`KernelImpl::fastest`]. Selecting one explicitly is for benchmarks and parity tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelImpl {
    /// Burn tensor ops: runs on every backend and device, differentiable through autodiff.
    Reference,
    /// The fused kernel of the device's backend, with a hand-written backward under autodiff,
    /// `f32` only: on Flex the CPU kernel, parallel over `(batch, head)` on rayon's thread
    /// pool; on a CubeCL device (features `wgpu`/`cuda`) the CubeCL kernel.
    Fused,
    /// The fused CPU kernel on the calling thread only (Flex devices).
    FusedSerial,
}

impl KernelImpl {
    /// The fastest implementation available for tensors of `dtype` on `device`.
    pub fn fastest(device: &Device, dtype: DType) -> Self {
        if Self::Fused.is_available(device, dtype) {
            Self::Fused
        } else {
            Self::Reference
        }
    }

    /// Whether this implementation can run tensors of `dtype` on `device`.
    pub fn is_available(self, device: &Device, dtype: DType) -> bool {
        match self {
            Self::Reference => true,
            Self::Fused => {
                dtype == DType::F32
                    && (is_flex(device.as_dispatch()) || is_cube(device.as_dispatch()))
            }
            Self::FusedSerial => dtype == DType::F32 && is_flex(device.as_dispatch()),
        }
    }

    /// The implementation of an op whose fused kernel exists on Flex only (the RWKV-7 block's
    /// linear map): [`KernelImpl::FusedSerial`] for `f32` on Flex, the reference elsewhere.
    pub(crate) fn fastest_flex_only(device: &Device, dtype: DType) -> Self {
        if Self::FusedSerial.is_available(device, dtype) {
            Self::FusedSerial
        } else {
            Self::Reference
        }
    }

    /// The implementation of an element-wise op of the RWKV-7 block (layer norm, sigmoid,
    /// tanh): [`KernelImpl::FusedSerial`] for `f32` on a plain Flex device, the reference
    /// elsewhere, autodiff included. Training keeps burn's own ops: the fused kernels round
    /// differently, and over a training run that moved dev scores (BENCHMARKS.md, "The RWKV-7
    /// block's other ops").
    pub(crate) fn fastest_for_inference(device: &Device, dtype: DType) -> Self {
        if device.is_autodiff() {
            Self::Reference
        } else {
            Self::fastest_flex_only(device, dtype)
        }
    }

    /// Panics, naming `op`, unless this is the reference or tensors of `dtype` on `device` can
    /// run a Flex-only fused kernel (the counterpart of [`KernelImpl::fastest_flex_only`]).
    pub(crate) fn check_flex_only(self, op: &str, device: &Device, dtype: DType) {
        assert!(
            self == Self::Reference || Self::FusedSerial.is_available(device, dtype),
            "{op}: the fused kernel runs on f32 tensors on a Flex device, not {dtype:?} on {device:?}"
        );
    }

    /// As [`KernelImpl::check_flex_only`], and the device must not be autodiff: the
    /// inference-only kernels have no backward (the counterpart of
    /// [`KernelImpl::fastest_for_inference`]).
    pub(crate) fn check_for_inference(self, op: &str, device: &Device, dtype: DType) {
        self.check_flex_only(op, device, dtype);
        assert!(
            self == Self::Reference || !device.is_autodiff(),
            "{op}: the fused kernel has no backward; use the reference under autodiff"
        );
    }

    /// Whether a fused implementation may use several threads.
    pub(crate) fn parallel(self) -> bool {
        self == Self::Fused
    }
}

/// A Flex device, possibly wrapped in autodiff.
fn is_flex(device: &DispatchDevice) -> bool {
    #[allow(unreachable_patterns)] // which other variants exist depends on burn's features
    match device {
        DispatchDevice::Flex(_) => true,
        DispatchDevice::Autodiff(inner) => is_flex(inner),
        _ => false,
    }
}

/// A CubeCL device (wgpu, CUDA, ...), possibly wrapped in autodiff, when this crate was built
/// with its CubeCL kernels.
fn is_cube(device: &DispatchDevice) -> bool {
    #[allow(unreachable_patterns)]
    match device {
        #[cfg(feature = "cube")]
        DispatchDevice::Cube(_) => true,
        DispatchDevice::Autodiff(inner) => is_cube(inner),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fused_is_chosen_on_flex_f32_only() {
        for device in [Device::flex(), Device::flex().autodiff()] {
            assert_eq!(KernelImpl::fastest(&device, DType::F32), KernelImpl::Fused);
            assert_eq!(
                KernelImpl::fastest(&device, DType::F64),
                KernelImpl::Reference
            );
            assert!(KernelImpl::FusedSerial.is_available(&device, DType::F32));
        }
    }
}
