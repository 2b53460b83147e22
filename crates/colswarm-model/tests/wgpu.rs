//! The shipped model annotates on a CubeCL device (feature `wgpu`; Mesa's lavapipe in CI) as it
//! does on the CPU: the same labels, probabilities within 1e-4.
#![cfg(feature = "wgpu")]

use std::path::{Path, PathBuf};

use colswarm_model::{Annotator, DeviceChoice, SpecialistUse, read_table};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Largest difference allowed between a probability on wgpu and on the CPU. The kernels sum
/// in other orders, so outputs differ by float rounding (measured: ~1e-6).
const TOLERANCE: f64 = 1e-4;

/// Asserts `a` and `b` are the same JSON up to `TOLERANCE` on numbers; names where they differ.
fn assert_close(a: &Value, b: &Value, at: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!((x - y).abs() <= TOLERANCE, "{at}: {x} (cpu) vs {y} (wgpu)");
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: lengths differ");
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                assert_close(x, y, &format!("{at}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>(),
                "{at}"
            );
            for (key, x) in x {
                assert_close(x, &y[key], &format!("{at}.{key}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

#[test]
fn annotations_on_wgpu_equal_the_cpu_ones() {
    let tables: Vec<_> = [
        "datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv",
        "datasets/t2d-webtables/samples/8468806_0_4382447409703007384.csv",
    ]
    .iter()
    .map(|path| read_table(root().join(path)).unwrap())
    .collect();
    let model = root().join("models/colswarm-small");
    // Every specialist on, so their reads and the fusion run on the device too.
    let annotate = |device: DeviceChoice| {
        let annotator = Annotator::builder(&model)
            .specialists(SpecialistUse::All)
            .device(device)
            .build()
            .unwrap();
        serde_json::to_value(annotator.annotate_all(&tables).unwrap()).unwrap()
    };
    let (cpu, gpu) = (annotate(DeviceChoice::Cpu), annotate(DeviceChoice::Wgpu));
    assert_close(&cpu, &gpu, "annotations");
}
