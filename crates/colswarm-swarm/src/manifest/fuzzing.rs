//! Body of the `manifest` fuzz target in the workspace's `fuzz-models/` folder, kept here so it
//! compiles (and runs, from its `smoke_tests` module, under `cargo test`) as ordinary code. It must never panic:
//! whatever `swarm.json` or component file it is given, [`Swarm::load`] gives a swarm or an
//! error that names a file.
//!
//! A tiny valid model directory is saved once per process under [`std::env::temp_dir`]; each
//! input is then loaded beside it (its components are found there).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use burn::tensor::Device;
use colswarm_rwkv::{RwkvConfig, RwkvError, save_checkpoint};
use sha2::{Digest, Sha256};

use super::{FileRef, MANIFEST_FILE, SwarmManifest};
use crate::error::SwarmError;
use crate::heads::LabelKind;
use crate::orchestrator::{OrchestratorConfig, Swarm};
use crate::specialist::FrozenSpecialist;

/// The valid model directory every input is loaded beside.
#[derive(Debug)]
struct Base {
    dir: PathBuf,
    manifest: SwarmManifest,
}

/// The specialist of the tiny swarm: two heads where the primary has one, so its alignment is a
/// real map, not the identity.
fn specialist_config() -> RwkvConfig {
    RwkvConfig::minimal(4, 4, 1)
}

fn build_base() -> Result<Base, SwarmError> {
    let device = Device::flex();
    let dir = std::env::temp_dir().join(format!("colswarm-fuzz-swarm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|source| SwarmError::Io {
        path: dir.clone(),
        source,
    })?;
    let spec_path = dir.join("specialist.safetensors");
    let spec_config = specialist_config();
    save_checkpoint(&spec_config.init(1, &device), &spec_config, &spec_path)?;
    let specialist = FrozenSpecialist::load("spec", &spec_path, &device)?;
    let config = OrchestratorConfig::new(RwkvConfig::minimal(4, 2, 1), 3, LabelKind::MultiLabel, 2)
        .with_d_head_hidden(2);
    let orchestrator = config.init(&[specialist.state_shape()], 0, &device);
    let swarm = Swarm::new(orchestrator, vec![specialist])?;
    let labels =
        |prefix: &str, n: usize| (0..n).map(|i| format!("{prefix}{i}")).collect::<Vec<_>>();
    let manifest = swarm.save(&dir, &config, &labels("type", 3), &labels("rel", 2))?;
    Ok(Base { dir, manifest })
}

fn base() -> Option<&'static Base> {
    static BASE: OnceLock<Option<Base>> = OnceLock::new();
    BASE.get_or_init(|| build_base().ok()).as_ref()
}

/// Files written for one input, removed when dropped.
struct Written(Vec<PathBuf>);

impl Drop for Written {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The component a mode byte replaces, as a mutable reference into the manifest.
fn component(manifest: &mut SwarmManifest, which: u8) -> &mut FileRef {
    match which % 7 {
        0 => &mut manifest.primary,
        // The fuzzed model has a specialist, so both files.
        1 => manifest
            .router
            .as_mut()
            .expect("a routed swarm's router file"),
        2 => manifest
            .fusion
            .as_mut()
            .expect("a routed swarm's fusion file"),
        3 => &mut manifest.cta_head,
        4 => &mut manifest.cpa_head,
        5 => &mut manifest.specialists[0].checkpoint,
        _ => &mut manifest.specialists[0].alignment,
    }
}

/// True for errors that name the file they are about.
fn names_a_file(error: &SwarmError) -> bool {
    !matches!(
        error,
        SwarmError::Input(_)
            | SwarmError::Inconsistent(_)
            | SwarmError::Checkpoint(RwkvError::InvalidConfig(_))
    )
}

/// Loads a fuzzed model directory. The first byte picks what is fuzzed:
///
/// - even: the rest is `swarm.json` (the tiny swarm's components lie beside it);
/// - odd: the rest is one component file (byte / 2 mod 7: primary, router, fusion, CTA head,
///   CPA head, specialist, alignment), named in the tiny swarm's manifest with its true
///   SHA-256, so the loader gets past the manifest's checksum to the file itself.
pub fn fuzz_manifest(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Some(base) = base() else {
        return;
    };
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let stem = format!("fuzz-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let manifest_path = base.dir.join(format!("{stem}.json"));
    let mut written = Written(vec![manifest_path.clone()]);
    let manifest_bytes = if mode % 2 == 0 {
        rest.to_vec()
    } else {
        let name = format!("{stem}.safetensors");
        let path = base.dir.join(&name);
        if std::fs::write(&path, rest).is_err() {
            return;
        }
        written.0.push(path);
        let mut manifest = base.manifest.clone();
        *component(&mut manifest, mode / 2) = FileRef {
            path: name,
            sha256: format!("{:x}", Sha256::digest(rest)),
        };
        match serde_json::to_vec(&manifest) {
            Ok(bytes) => bytes,
            Err(_) => return,
        }
    };
    if std::fs::write(&manifest_path, &manifest_bytes).is_err() {
        return;
    }
    match Swarm::load(&manifest_path, &Device::flex()) {
        Ok((swarm, manifest)) => {
            assert_eq!(swarm.specialists.len(), manifest.specialists.len());
            assert_eq!(
                swarm.orchestrator.alignments.len(),
                manifest.specialists.len()
            );
        }
        Err(error) => assert!(names_a_file(&error), "no file named: {error}"),
    }
    drop(written);
}

/// Seed inputs for the fuzzer: the tiny swarm's manifest and each of its component files, in
/// the format [`fuzz_manifest`] reads.
pub fn seeds() -> Vec<Vec<u8>> {
    let Some(base) = base() else {
        return Vec::new();
    };
    let mut seeds = Vec::new();
    if let Ok(json) = std::fs::read(base.dir.join(MANIFEST_FILE)) {
        seeds.push([&[0u8][..], &json].concat());
    }
    for which in 0..7u8 {
        let mut manifest = base.manifest.clone();
        let file = component(&mut manifest, which);
        if let Ok(bytes) = std::fs::read(Path::new(&base.dir).join(&file.path)) {
            seeds.push([&[2 * which + 1][..], &bytes].concat());
        }
    }
    seeds
}

#[cfg(test)]
mod smoke_tests;
