//! One list of specialists in the manifest: the state specialists and the ones that contribute
//! their answers (experts), each named once. A v2 directory, whose experts sit in a second file
//! (`experts.json`), reads as the same list, and is written back as v3 without that file.

use std::path::{Path, PathBuf};

use burn::tensor::Device;
use colswarm_swarm::SwarmError;
use colswarm_swarm::manifest::{
    ExpertRef, LEGACY_EXPERTS_FILE, MANIFEST_FILE, MANIFEST_FORMAT, ManifestVersion, SwarmManifest,
    set_experts, set_router_threshold,
};
use colswarm_swarm::{OrchestratorConfig, Swarm};
use serde_json::{Value, json};

/// A copy of the tiny well-formed model of `tests/malformed/` (a v2 manifest with one state
/// specialist, `spec`).
fn tiny_model() -> tempfile::TempDir {
    let corpus = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/malformed"));
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&corpus).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap();
        if path.extension().is_some_and(|e| e == "safetensors") || name == MANIFEST_FILE {
            std::fs::copy(&path, dir.path().join(name)).unwrap();
        }
    }
    dir
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn write_legacy_experts(dir: &Path, names: &[&str]) {
    let experts: Vec<Value> = names
        .iter()
        .map(|name| json!({"name": name, "dir": format!("experts/{name}"), "open_below": 0.9}))
        .collect();
    let list = json!({ "experts": experts });
    std::fs::write(dir.join(LEGACY_EXPERTS_FILE), list.to_string()).unwrap();
}

#[test]
fn a_v2_directory_reads_as_one_list_and_is_rewritten_as_v3_without_its_second_file() {
    let dir = tiny_model();
    write_legacy_experts(dir.path(), &["answers-a", "answers-b"]);
    let before = SwarmManifest::read(dir.path()).unwrap();
    assert_eq!(before.version, ManifestVersion::V2);
    let names: Vec<&str> = before.specialist_names().collect();
    assert_eq!(names, ["spec", "answers-a", "answers-b"]);
    assert_eq!(before.experts[1].open_below, Some(0.9));

    set_router_threshold(dir.path(), 0.7).unwrap();
    assert!(!dir.path().join(LEGACY_EXPERTS_FILE).exists());
    let written = read_json(&dir.path().join(MANIFEST_FILE));
    assert_eq!(written["format"], MANIFEST_FORMAT);
    let listed: Vec<(&str, &str)> = written["specialists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap(),
                s["contributes"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("spec", "state"),
            ("answers-a", "answers"),
            ("answers-b", "answers")
        ]
    );
    assert!(written["expert_routing"].is_null());

    let after = SwarmManifest::read(dir.path()).unwrap();
    assert_eq!(after.version, ManifestVersion::V3);
    assert_eq!(after.experts, before.experts);
    assert_eq!(after.specialists, before.specialists);
    assert_eq!(after.config.threshold, 0.7);
    // The weights are untouched: the model still loads, checksums and all.
    Swarm::load(dir.path(), &Device::flex()).unwrap();
}

#[test]
fn a_name_listed_twice_is_refused_naming_the_file() {
    // v2: an expert named as the state specialist, named in the second file.
    let dir = tiny_model();
    write_legacy_experts(dir.path(), &["spec"]);
    let error = SwarmManifest::read(dir.path()).unwrap_err().to_string();
    assert!(
        error.contains(LEGACY_EXPERTS_FILE) && error.contains("\"spec\" is listed twice"),
        "{error}"
    );

    // v3: the one list names it twice.
    let dir = tiny_model();
    set_router_threshold(dir.path(), 0.5).unwrap();
    let path = dir.path().join(MANIFEST_FILE);
    let mut manifest = read_json(&path);
    let again = json!({"name": "spec", "contributes": "answers", "dir": "experts/spec"});
    manifest["specialists"].as_array_mut().unwrap().push(again);
    std::fs::write(&path, manifest.to_string()).unwrap();
    let error = SwarmManifest::read(dir.path()).unwrap_err().to_string();
    assert!(
        error.contains(MANIFEST_FILE) && error.contains("\"spec\" is listed twice"),
        "{error}"
    );

    // An unknown contribution is named.
    let entries = manifest["specialists"].as_array_mut().unwrap();
    entries.pop();
    entries.push(json!({"name": "x", "contributes": "gradients", "dir": "experts/x"}));
    std::fs::write(&path, manifest.to_string()).unwrap();
    let error = SwarmManifest::read(dir.path()).unwrap_err().to_string();
    assert!(error.contains("gradients"), "{error}");
}

#[test]
fn set_experts_refuses_a_taken_name_and_leaves_the_manifest_as_it_was() {
    let dir = tiny_model();
    let path = dir.path().join(MANIFEST_FILE);
    let before = std::fs::read(&path).unwrap();
    let taken = ExpertRef {
        name: "spec".into(),
        dir: "experts/spec".into(),
        open_below: None,
    };
    let error = set_experts(dir.path(), vec![taken], None).unwrap_err();
    assert!(
        matches!(&error, SwarmError::Manifest { reason, .. } if reason.contains("\"spec\"")),
        "{error}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn saving_a_swarm_again_keeps_the_experts_its_directory_lists() {
    let dir = tiny_model();
    write_legacy_experts(dir.path(), &["answers-a"]);
    let device = Device::flex();
    let (swarm, manifest) = Swarm::load(dir.path(), &device).unwrap();
    let config: OrchestratorConfig = manifest.config.clone();
    swarm
        .save(
            dir.path(),
            &config,
            &manifest.cta_labels,
            &manifest.cpa_labels,
        )
        .unwrap();
    let saved = SwarmManifest::read(dir.path()).unwrap();
    assert_eq!(saved.version, ManifestVersion::V3);
    assert_eq!(saved.experts, manifest.experts);
    assert!(!dir.path().join(LEGACY_EXPERTS_FILE).exists());
}
