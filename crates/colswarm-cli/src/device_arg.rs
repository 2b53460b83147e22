//! `--device`, shared by every command that runs a model.

use anyhow::Result;
use burn::tensor::Device;
use clap::Args;
use colswarm_rwkv::DeviceChoice;

/// The `--device` argument.
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct DeviceArg {
    /// Where the model runs: cpu, wgpu, cuda or auto (the fastest this build and machine
    /// have). GPU backends are in builds with `--features wgpu` (or `cuda`).
    #[arg(long = "device", value_name = "DEVICE", default_value_t = DeviceChoice::Cpu)]
    choice: DeviceChoice,
}

impl DeviceArg {
    /// Opens the device, or says in one line how to get it.
    pub(crate) fn open(self) -> Result<Device> {
        Ok(self.choice.device()?)
    }
}
