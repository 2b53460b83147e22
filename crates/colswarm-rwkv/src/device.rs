//! Which device a model runs on, as users name it: `cpu`, `wgpu`, `cuda` or `auto`.
//!
//! burn picks its backend at run time from a [`Device`]; [`DeviceChoice`] turns a user's word
//! into one, with a clear error when this build or this machine lacks it. GPU backends are
//! opt-in cargo features (`wgpu`, `cuda`) of this crate and of everything built on it.
//!
//! ```
//! use colswarm_rwkv::DeviceChoice;
//!
//! let device = "cpu".parse::<DeviceChoice>().unwrap().device().unwrap();
//! assert!(!device.is_autodiff());
//! assert!("tpu".parse::<DeviceChoice>().is_err());
//! ```

use std::fmt;
use std::str::FromStr;

use burn::tensor::Device;

/// A device as a user names it. `Cpu` is burn's Flex backend; `Wgpu` runs the CubeCL kernels on
/// any Vulkan, Metal or DirectX 12 adapter; `Cuda` on an NVIDIA GPU through CUDA; `Auto` takes
/// the first of `cuda`, `wgpu`, `cpu` that this build has and this machine can open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DeviceChoice {
    /// burn's Flex backend on the CPU (the default).
    #[default]
    Cpu,
    /// wgpu's default adapter (needs the `wgpu` feature).
    Wgpu,
    /// The first CUDA device (needs the `cuda` feature).
    Cuda,
    /// The fastest device available: CUDA, then wgpu, then the CPU.
    Auto,
}

/// Why a [`DeviceChoice`] could not be opened or parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// Not one of the names [`DeviceChoice`] knows.
    #[error("unknown device `{0}`: expected cpu, wgpu, cuda or auto")]
    Unknown(String),
    /// This binary or library was built without the backend.
    #[error(
        "this build of colswarm has no {device} support: rebuild with `--features {device}` \
         (e.g. `cargo build --release --features {device}`), or use `--device cpu`"
    )]
    NotBuilt {
        /// `wgpu` or `cuda`.
        device: &'static str,
    },
    /// The backend is built in but found no adapter on this machine.
    #[error("no {device} device found on this machine: {hint}")]
    NotFound {
        /// `wgpu` or `cuda`.
        device: &'static str,
        /// What would provide one.
        hint: &'static str,
    },
}

const WGPU_HINT: &str = "wgpu needs a Vulkan, Metal or DirectX 12 driver (on Linux without a GPU, \
    Debian's mesa-vulkan-drivers and libvulkan1 provide a software one); or use `--device cpu`";
const CUDA_HINT: &str = "CUDA needs an NVIDIA GPU and its driver; or use `--device cpu`";

impl DeviceChoice {
    /// Every name, in the order `--help` lists them.
    pub const NAMES: [&'static str; 4] = ["cpu", "wgpu", "cuda", "auto"];

    /// The name users type.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::Wgpu => "wgpu",
            Self::Cuda => "cuda",
            Self::Auto => "auto",
        }
    }

    /// Opens the device (without autodiff; training adds it with [`Device::autodiff`]).
    ///
    /// # Errors
    ///
    /// [`DeviceError::NotBuilt`] for a backend this build lacks, [`DeviceError::NotFound`]
    /// when the machine has no adapter for it.
    pub fn device(self) -> Result<Device, DeviceError> {
        match self {
            Self::Cpu => Ok(Device::flex()),
            Self::Wgpu => wgpu(),
            Self::Cuda => cuda(),
            Self::Auto => Ok(cuda()
                .or_else(|_| wgpu())
                .unwrap_or_else(|_| Device::flex())),
        }
    }
}

impl fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DeviceChoice {
    type Err = DeviceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cpu" | "flex" => Ok(Self::Cpu),
            "wgpu" | "gpu" | "vulkan" => Ok(Self::Wgpu),
            "cuda" => Ok(Self::Cuda),
            "auto" => Ok(Self::Auto),
            _ => Err(DeviceError::Unknown(s.to_string())),
        }
    }
}

#[cfg(feature = "wgpu")]
fn wgpu() -> Result<Device, DeviceError> {
    use burn::tensor::{DeviceKind, DeviceType};
    // Listing adapters panics inside wgpu when no Vulkan loader is installed at all.
    let found = std::panic::catch_unwind(|| !Device::enumerate(DeviceType::Wgpu).is_empty());
    match found {
        Ok(true) => Ok(Device::wgpu(DeviceKind::DefaultDevice)),
        _ => Err(DeviceError::NotFound {
            device: "wgpu",
            hint: WGPU_HINT,
        }),
    }
}

#[cfg(not(feature = "wgpu"))]
fn wgpu() -> Result<Device, DeviceError> {
    let _ = WGPU_HINT;
    Err(DeviceError::NotBuilt { device: "wgpu" })
}

#[cfg(feature = "cuda")]
fn cuda() -> Result<Device, DeviceError> {
    use burn::tensor::DeviceType;
    // cudarc panics when libcuda cannot be loaded.
    let found = std::panic::catch_unwind(|| !Device::enumerate(DeviceType::Cuda).is_empty());
    match found {
        Ok(true) => Ok(Device::cuda(0)),
        _ => Err(DeviceError::NotFound {
            device: "cuda",
            hint: CUDA_HINT,
        }),
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda() -> Result<Device, DeviceError> {
    let _ = CUDA_HINT;
    Err(DeviceError::NotBuilt { device: "cuda" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in DeviceChoice::NAMES {
            let choice: DeviceChoice = name.parse().unwrap();
            assert_eq!(choice.name(), name);
            assert_eq!(choice.to_string(), name);
        }
        assert_eq!(" CPU ".parse::<DeviceChoice>(), Ok(DeviceChoice::Cpu));
        assert_eq!(DeviceChoice::default(), DeviceChoice::Cpu);
    }

    #[test]
    fn unknown_names_are_an_error_naming_them() {
        let err = "tpu".parse::<DeviceChoice>().unwrap_err();
        assert_eq!(err, DeviceError::Unknown("tpu".into()));
        assert!(err.to_string().contains("`tpu`"), "{err}");
    }

    #[test]
    fn cpu_and_auto_always_open() {
        assert!(DeviceChoice::Cpu.device().is_ok());
        assert!(DeviceChoice::Auto.device().is_ok());
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn cuda_without_the_feature_says_how_to_get_it() {
        let err = DeviceChoice::Cuda.device().unwrap_err();
        assert_eq!(err, DeviceError::NotBuilt { device: "cuda" });
        let message = err.to_string();
        assert!(message.contains("--features cuda"), "{message}");
        assert!(!message.contains('\n'), "one line: {message}");
    }

    #[cfg(not(feature = "wgpu"))]
    #[test]
    fn wgpu_without_the_feature_says_how_to_get_it() {
        let err = DeviceChoice::Wgpu.device().unwrap_err();
        assert!(err.to_string().contains("--features wgpu"), "{err}");
    }

    /// CI's wgpu build runs on Mesa's lavapipe: the adapter is found and computes.
    #[cfg(feature = "wgpu")]
    #[test]
    fn wgpu_opens_an_adapter_that_computes() {
        use burn::tensor::Tensor;
        let device = DeviceChoice::Wgpu.device().expect("a wgpu adapter");
        let x = Tensor::<1>::from_floats([1.0, 2.0, 3.0], &device);
        let sum: f32 = x.sum().into_scalar();
        assert_eq!(sum, 6.0);
    }
}
