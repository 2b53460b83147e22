//! Model directories of older layouts load, upgraded in memory, and give the same outputs; the
//! current layout is written by save and holds every field; an unknown layout is an error that
//! names its file.

use std::path::{Path, PathBuf};

use burn::tensor::Device;
use colswarm_model::{
    Activation, Columns, Example, LABELS_FILE, Model, SERIALIZE_FILE, SpecialistUse,
    save_model_extras,
};
use colswarm_swarm::Swarm;
use colswarm_swarm::manifest::{
    LEGACY_EXPERTS_FILE, MANIFEST_FILE, MANIFEST_FORMAT, MANIFEST_FORMAT_V1, MANIFEST_FORMAT_V2,
    ManifestVersion, set_router_threshold,
};
use colswarm_tables::Table;
use serde_json::Value;

/// The shipped model.
fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/colswarm-small")
}

/// The shipped model as the v1 layout can hold it, in `to`: a copy without word vectors, which
/// came after v1 (its manifest without them; every other file and weight unchanged).
fn without_word_vectors(to: &Path) -> PathBuf {
    copy_dir(&shipped(), to);
    // Models of those layouts had no domain experts (and the shipped ones read word vectors).
    std::fs::remove_dir_all(to.join("experts")).unwrap();
    let mut manifest = read_json(&to.join(MANIFEST_FILE));
    as_v2(&mut manifest);
    manifest.as_object_mut().unwrap().remove("column_words");
    manifest["config"]
        .as_object_mut()
        .unwrap()
        .remove("column_words");
    write_json(&to.join(MANIFEST_FILE), &manifest);
    to.to_path_buf()
}

/// A v3 manifest as the v2 layout wrote it: its state specialists alone, without the
/// `contributes` tag; returns its experts' entries and their routing, which v2 kept in
/// `experts.json`.
fn as_v2(manifest: &mut Value) -> (Vec<Value>, Value) {
    manifest["format"] = MANIFEST_FORMAT_V2.into();
    let object = manifest.as_object_mut().unwrap();
    let routing = object.remove("expert_routing").unwrap();
    let mut experts = Vec::new();
    let mut state = Vec::new();
    for mut entry in object["specialists"].as_array().unwrap().clone() {
        let kind = entry
            .as_object_mut()
            .unwrap()
            .remove("contributes")
            .unwrap();
        match kind.as_str().unwrap() {
            "state" => state.push(entry),
            _ => experts.push(entry),
        }
    }
    object.insert("specialists".into(), state.into());
    (experts, routing)
}

/// That model's files in a `colswarm-swarm-v1` directory at `to`, as colswarm wrote them before
/// v2: the same weights, a manifest of that format that names its column pooling and has no
/// column fusion. Returns the v2 copy it was made from, in `to`'s sibling `v2`.
fn v1_copy(to: &Path) -> PathBuf {
    let v2 = without_word_vectors(&to.with_file_name("v2"));
    copy_dir(&v2, to);
    let mut manifest = read_json(&to.join(MANIFEST_FILE));
    manifest["format"] = MANIFEST_FORMAT_V1.into();
    let config = manifest["config"].as_object_mut().unwrap();
    config.insert("column_pooling".into(), "SpanMean".into());
    config.remove("column_fusion");
    write_json(&to.join(MANIFEST_FILE), &manifest);
    v2
}

/// Copies a directory tree (an old layout: not a model directory this version opens as is).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

fn tables() -> Vec<Table> {
    vec![
        Table::from_rows(
            "films",
            Some(vec!["Title".into(), "Director".into(), "Year".into()]),
            vec![
                vec!["Alien".into(), "Ridley Scott".into(), "1979".into()],
                vec!["Heat".into(), "Michael Mann".into(), "1995".into()],
            ],
        ),
        Table::from_rows(
            "cities",
            Some(vec!["city".into(), "country".into(), "population".into()]),
            vec![vec!["Oslo".into(), "Norway".into(), "709000".into()]],
        ),
    ]
}

/// The model's CTA logits on [`tables`], with its router deciding.
fn logits(model: &Model) -> Vec<f32> {
    let examples = model.encode(&tables(), Columns::All);
    let refs: Vec<&Example> = examples.iter().collect();
    let out = model.forward(&refs, SpecialistUse::Router).unwrap();
    out.cta_logits.into_data().try_to_vec::<f32>().unwrap()
}

fn load(dir: &Path) -> Model {
    Model::load(dir, &Device::flex()).unwrap()
}

fn load_error(dir: &Path) -> String {
    Model::load(dir, &Device::flex()).unwrap_err().to_string()
}

#[test]
fn a_v1_model_loads_from_its_files_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("model");
    let v2 = v1_copy(&copy);
    let before: Vec<Vec<u8>> = [MANIFEST_FILE, LABELS_FILE, SERIALIZE_FILE]
        .iter()
        .map(|f| std::fs::read(copy.join(f)).unwrap())
        .collect();
    let (_, manifest) = Swarm::load(&copy, &Device::flex()).unwrap();
    assert_eq!(manifest.version, ManifestVersion::V1);
    let model = load(&copy);
    assert_eq!(logits(&model), logits(&load(&v2)));
    // Loading migrates in memory only.
    for (file, bytes) in [MANIFEST_FILE, LABELS_FILE, SERIALIZE_FILE]
        .iter()
        .zip(before)
    {
        assert_eq!(std::fs::read(copy.join(file)).unwrap(), bytes, "{file}");
    }
}

#[test]
fn a_v1_manifest_refuses_a_new_router_threshold_and_stays_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("model");
    v1_copy(&copy);
    let before = std::fs::read(copy.join(MANIFEST_FILE)).unwrap();
    let err = set_router_threshold(&copy, 1.0).unwrap_err().to_string();
    assert!(err.contains(MANIFEST_FILE), "{err}");
    assert!(err.contains(MANIFEST_FORMAT_V1), "{err}");
    assert_eq!(std::fs::read(copy.join(MANIFEST_FILE)).unwrap(), before);
    // Saved again, the model is in the current layout and takes the threshold.
    let (swarm, manifest) = Swarm::load(&copy, &Device::flex()).unwrap();
    let upgraded = dir.path().join("upgraded");
    let c = &manifest;
    swarm
        .save(&upgraded, &c.config, &c.cta_labels, &c.cpa_labels)
        .unwrap();
    assert_eq!(
        set_router_threshold(&upgraded, 1.0)
            .unwrap()
            .config
            .threshold,
        1.0
    );
}

#[test]
fn older_serialize_and_label_files_take_the_defaults_they_always_meant() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("model");
    v1_copy(&copy);
    // serialize.json from before the query budgets: they meant 32 and 16 bytes.
    let mut serialize = read_json(&copy.join(SERIALIZE_FILE));
    let object = serialize.as_object_mut().unwrap();
    object.remove("query_header_bytes");
    object.remove("query_cell_bytes");
    write_json(&copy.join(SERIALIZE_FILE), &serialize);
    // labels.json from before activations and hierarchies: softmax, no ancestors.
    let mut labels = read_json(&copy.join(LABELS_FILE));
    for list in ["cta", "cpa"] {
        for namespace in labels[list].as_array_mut().unwrap() {
            let object = namespace.as_object_mut().unwrap();
            object.remove("activation");
            object.remove("ancestors");
        }
    }
    write_json(&copy.join(LABELS_FILE), &labels);

    let model = load(&copy);
    let s = model.serialize;
    assert_eq!((s.query_header_bytes, s.query_cell_bytes), (32, 16));
    assert_eq!(s.max_table_tokens, 128, "the fields present are kept");
    for namespace in model.space.cta.iter().chain(&model.space.cpa) {
        assert_eq!(namespace.activation, Activation::Softmax);
        assert!(namespace.ancestors.is_empty());
    }

    // The same files beside a v2 manifest miss required fields: an error naming the file.
    let mut manifest = read_json(&copy.join(MANIFEST_FILE));
    manifest["format"] = MANIFEST_FORMAT_V2.into();
    let config = manifest["config"].as_object_mut().unwrap();
    config.remove("column_pooling");
    config.remove("wide_ngrams");
    write_json(&copy.join(MANIFEST_FILE), &manifest);
    let error = load_error(&copy);
    assert!(
        error.contains(LABELS_FILE) && error.contains("missing field `activation`"),
        "{error}"
    );
}

#[test]
fn a_v1_manifest_without_its_later_fields_takes_their_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("model");
    let v2 = v1_copy(&copy);
    let mut manifest = read_json(&copy.join(MANIFEST_FILE));
    let config = manifest["config"].as_object_mut().unwrap();
    for field in ["budget", "wide_ngrams"] {
        config.remove(field);
    }
    let ngrams = config["column_ngrams"].as_object_mut().unwrap();
    for field in ["min_n", "max_n", "max_cells"] {
        ngrams.remove(field);
    }
    write_json(&copy.join(MANIFEST_FILE), &manifest);
    let model = load(&copy);
    assert_eq!(logits(&model), logits(&load(&v2)));
}

#[test]
fn v1_models_of_removed_options_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("model");
    v1_copy(&copy);
    let original = read_json(&copy.join(MANIFEST_FILE));
    let cases: [(&str, Value, &str); 4] = [
        ("column_pooling", Value::Null, "--no-span-pooling"),
        ("column_pooling", "SecondRead".into(), "--read-twice"),
        ("alignment", "Learned".into(), "--learned-alignment"),
        (
            "wide_ngrams",
            serde_json::json!({"buckets": 8}),
            "--wide-buckets",
        ),
    ];
    for (field, value, flag) in cases {
        let mut manifest = original.clone();
        manifest["config"][field] = value;
        write_json(&copy.join(MANIFEST_FILE), &manifest);
        let error = load_error(&copy);
        assert!(
            error.contains(MANIFEST_FILE) && error.contains(flag),
            "{field}: {error}"
        );
    }
}

#[test]
fn a_v1_model_with_neighbour_ngrams_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("model");
    let v2 = v1_copy(&copy);
    let mut manifest = read_json(&copy.join(MANIFEST_FILE));
    manifest["config"]["column_ngrams"]["neighbours"] = true.into();
    write_json(&copy.join(MANIFEST_FILE), &manifest);
    let model = load(&copy);
    let ngrams = model.swarm.orchestrator.column_ngrams().unwrap();
    assert!(ngrams.neighbours);
    assert_ne!(
        logits(&model),
        logits(&load(&v2)),
        "the bags hold the other columns"
    );
}

#[test]
fn an_unknown_format_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("model");
    v1_copy(&copy);
    let mut manifest = read_json(&copy.join(MANIFEST_FILE));
    manifest["format"] = "colswarm-swarm-v9".into();
    write_json(&copy.join(MANIFEST_FILE), &manifest);
    let error = load_error(&copy);
    assert!(
        error.contains(&copy.join(MANIFEST_FILE).display().to_string())
            && error.contains("unknown format \"colswarm-swarm-v9\""),
        "{error}"
    );
}

#[test]
fn saving_writes_the_current_layout_with_every_field_and_the_same_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let model = load(&shipped());
    let (swarm, manifest) = Swarm::load(&shipped(), &Device::flex()).unwrap();
    let out = dir.path().join("v3");
    swarm
        .save(
            &out,
            &manifest.config,
            &manifest.cta_labels,
            &manifest.cpa_labels,
        )
        .unwrap();
    save_model_extras(&out, &model.space, &model.serialize).unwrap();
    // The label space names its namespaces' readers, which the swarm does not save.
    copy_dir(&shipped().join("readers"), &out.join("readers"));

    let written = read_json(&out.join(MANIFEST_FILE));
    assert_eq!(written["format"], MANIFEST_FORMAT);
    assert!(written["config"]["budget"].is_null());
    assert_eq!(written["config"]["head_skip"], "Linear");
    let labels = read_json(&out.join(LABELS_FILE));
    for namespace in labels["cta"].as_array().unwrap() {
        assert!(namespace.get("activation").is_some() && namespace.get("ancestors").is_some());
    }
    let (_, again) = Swarm::load(&out, &Device::flex()).unwrap();
    assert_eq!(again.version, ManifestVersion::V3);
    assert_eq!(again.config, manifest.config);
    assert_eq!(logits(&load(&out)), logits(&model));

    // A required field missing from a v3 manifest is an error naming it and the file.
    let mut broken = written.clone();
    broken["config"]
        .as_object_mut()
        .unwrap()
        .remove("head_skip");
    write_json(&out.join(MANIFEST_FILE), &broken);
    let error = load_error(&out);
    assert!(
        error.contains(MANIFEST_FILE) && error.contains("missing field `head_skip`"),
        "{error}"
    );
}

#[test]
fn a_v2_directory_with_its_experts_file_annotates_as_the_shipped_model_and_rewrites_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("v2");
    copy_dir(&shipped(), &copy);
    let shipped_manifest = std::fs::read(shipped().join(MANIFEST_FILE)).unwrap();
    let mut manifest = read_json(&copy.join(MANIFEST_FILE));
    let (experts, routing) = as_v2(&mut manifest);
    assert_eq!(experts.len(), 4, "the shipped model's four experts");
    write_json(&copy.join(MANIFEST_FILE), &manifest);
    let mut list = serde_json::json!({ "experts": experts });
    if !routing.is_null() {
        list["routing"] = routing;
    }
    write_json(&copy.join(LEGACY_EXPERTS_FILE), &list);

    let old = load(&copy);
    let read = colswarm_swarm::manifest::SwarmManifest::read(&copy).unwrap();
    assert_eq!(read.version, ManifestVersion::V2);
    let names: Vec<&str> = old.gate_names().collect();
    let shipped_model = load(&shipped());
    assert_eq!(names, shipped_model.gate_names().collect::<Vec<_>>());
    let annotate = |dir: &Path| {
        let annotator = colswarm_model::Annotator::builder(dir).build().unwrap();
        serde_json::to_string(&annotator.annotate_all(&tables()).unwrap()).unwrap()
    };
    assert_eq!(annotate(&copy), annotate(&shipped()));

    // The first rewrite writes the one list, byte for byte the shipped manifest, and removes
    // the second file.
    set_router_threshold(&copy, read.config.threshold).unwrap();
    assert!(!copy.join(LEGACY_EXPERTS_FILE).exists());
    assert_eq!(
        std::fs::read(copy.join(MANIFEST_FILE)).unwrap(),
        shipped_manifest
    );
}
