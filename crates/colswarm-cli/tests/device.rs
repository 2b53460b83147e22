//! `--device`: every command that runs a model takes it; a device the build lacks is a
//! one-line error that says how to get it; with `--features wgpu`, annotating on wgpu gives
//! the CPU's labels.

mod common;

use std::path::Path;

use common::colswarm;

const TABLE: &str = "datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv";
const MODEL: &str = "models/colswarm-small";

/// Each command that runs a model, with arguments that would otherwise get it going.
fn commands(out: &Path) -> Vec<Vec<String>> {
    let out = out.to_str().unwrap();
    let train = "t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#train";
    [
        vec!["annotate", "--model", MODEL, TABLE],
        vec!["bench", "--model", MODEL, TABLE],
        vec![
            "eval",
            "--model",
            MODEL,
            "--format",
            "t2d",
            "--input",
            "datasets/t2d-webtables/t2d.tar.gz",
        ],
        vec!["train", "--train", train, "--out", out],
        vec![
            "train-router",
            "--model",
            MODEL,
            "--train",
            train,
            "--out",
            out,
        ],
        vec!["probe", "--model", MODEL, "--train", train, "--dev", train],
        vec![
            "pretrain",
            "--objective",
            "header",
            "--corpus",
            "no/corpus",
            "--out",
            out,
        ],
    ]
    .iter()
    .map(|args| args.iter().map(|s| s.to_string()).collect())
    .collect()
}

#[cfg(not(feature = "cuda"))]
#[test]
fn every_command_refuses_cuda_without_the_feature_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for mut args in commands(&dir.path().join("run")) {
        args.extend(["--device".into(), "cuda".into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = colswarm(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(
            stderr.contains("no cuda support") && stderr.contains("--features cuda"),
            "{args:?}: {stderr}"
        );
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
    }
    // Nothing was written before the device was opened.
    assert!(!dir.path().join("run").exists());
}

#[test]
fn an_unknown_device_is_named_with_the_choices() {
    let out = colswarm(&["annotate", "--model", MODEL, "--device", "tpu", TABLE]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("`tpu`") && stderr.contains("cpu, wgpu, cuda or auto"),
        "{stderr}"
    );
}

#[cfg(feature = "wgpu")]
#[test]
fn annotate_on_wgpu_gives_the_cpu_labels() {
    let labels = |device: &str| -> Vec<String> {
        let out = colswarm(&[
            "annotate", "--model", MODEL, "--output", "csv", "--device", device, TABLE,
        ]);
        assert!(
            out.status.success(),
            "{device}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The label and relation fields of every (column, namespace) row, not the confidences.
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|line| {
                let fields: Vec<&str> = line.split(',').collect();
                format!("{:?}", [fields[1], fields[3], fields[4], fields[6]])
            })
            .collect()
    };
    let cpu = labels("cpu");
    assert!(cpu.len() > 1, "{cpu:?}");
    assert_eq!(cpu, labels("wgpu"));
}
