//! Reads a table file byte by byte with a (randomly initialised) RWKV-7 model, in sequence mode
//! and in step mode, and shows that both end in the same recurrent state.
//!
//! ```text
//! cargo run --example read_table -- datasets/t2d-webtables/tables/<file>.csv
//! ```
//!
//! This is the foundation's demo: no trained model ships yet, so it prints state statistics,
//! not annotations.

use std::time::Instant;

use burn::tensor::{Device, Int, Tensor, TensorData};
use colswarm::rwkv::RwkvConfig;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: read_table <table file>")?;
    let bytes = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    // Byte-level reading; the first 2 KiB keep the demo quick.
    let tokens: Vec<i64> = bytes.iter().take(2048).map(|&b| b as i64).collect();
    if tokens.is_empty() {
        return Err(format!("{path}: the file is empty").into());
    }
    let device = Device::flex();
    let config = RwkvConfig::new(260, 128, 2).with_head_size(32);
    let model = config.init(42, &device);
    println!(
        "model: d_model={} layers={} heads={} params={}",
        config.d_model,
        config.n_layers,
        config.n_heads(),
        config.num_params()
    );

    let time = tokens.len();
    let start = Instant::now();
    let input = Tensor::<2, Int>::from_data(TensorData::new(tokens.clone(), [1, time]), &device);
    let out = model.forward(input, None, None);
    let sequence_secs = start.elapsed().as_secs_f64();

    let start = Instant::now();
    let mut state = model.zero_state(1, &device);
    for &token in &tokens {
        let (_, next) = model.step(Tensor::from_data([token], &device), state);
        state = next;
    }
    let step_secs = start.elapsed().as_secs_f64();

    println!("read {time} bytes of {path}");
    println!(
        "sequence mode: {:.0} tokens/s; step mode: {:.0} tokens/s",
        time as f64 / sequence_secs,
        time as f64 / step_secs
    );
    for (layer, (seq, step)) in out.state.layers.iter().zip(&state.layers).enumerate() {
        let norm = seq
            .wkv
            .clone()
            .powf_scalar(2.0)
            .sum()
            .sqrt()
            .into_scalar::<f32>();
        let diff = (seq.wkv.clone() - step.wkv.clone())
            .abs()
            .max()
            .into_scalar::<f32>();
        println!("layer {layer}: |S| = {norm:.4}, max |S_sequence - S_step| = {diff:.2e}");
    }
    Ok(())
}
