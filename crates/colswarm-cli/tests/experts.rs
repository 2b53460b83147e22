//! `colswarm add-specialist` puts a model trained alone beside the shipped model's primary, as
//! a specialist that contributes its answers; `eval` and `annotate` then average its logits in
//! where it opens. On a dozen T2D tables and
//! tiny experts trained on them.

mod common;

use std::path::{Path, PathBuf};

use common::{STATE_SPECIALISTS, colswarm, root, state_swarm, stdout, t2d_subset};

/// Trains a tiny model on `data` that reads tables as the shipped primary does (its
/// serialization, n-grams and word vectors) but with `rows` rows per table read; returns its
/// directory.
fn train_expert(data: &Path, out: &Path, rows: &str) -> PathBuf {
    let train = format!("t2d=t2d:{}", data.display());
    let rows = format!("data.serialize.max_rows={rows}");
    let args = vec![
        "train",
        "--quiet",
        "--set",
        "model.d_model=32",
        "--set",
        "model.n_layers=1",
        "--set",
        "model.head_size=16",
        "--set",
        "model.d_head_hidden=16",
        "--epochs",
        "1",
        "--set",
        "model.word_vectors=models/colswarm-small/word_vectors.safetensors",
        "--set",
        "model.table_topic=true",
        "--set",
        &rows,
        "--seed",
        "3",
        "--train",
        &train,
        "--out",
        out.to_str().unwrap(),
    ];
    stdout(&colswarm(&args));
    out.join("best")
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Every scored target's probabilities, from an `eval --predictions` file.
fn probabilities(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["probabilities"].clone())
        .collect()
}

#[test]
fn an_expert_joins_the_shipped_model_and_moves_its_answers_where_it_opens() {
    let data = t2d_subset(12);
    let work = tempfile::tempdir().unwrap();
    let expert = train_expert(data.path(), &work.path().join("expert"), "8");
    let shipped = root().join("models/colswarm-small");
    let model = work.path().join("with-expert");
    let said = stdout(&colswarm(&[
        "add-specialist",
        "--model",
        shipped.to_str().unwrap(),
        "--specialist",
        &format!("t2d-alone={}", expert.display()),
        "--out",
        model.to_str().unwrap(),
    ]));
    assert!(said.contains("specialist t2d-alone: knows"), "{said}");
    // One list of specialists in the manifest: the shipped model's, then the new one.
    let listed = json(&model.join("swarm.json"))["specialists"].clone();
    let shipped_list = json(&shipped.join("swarm.json"))["specialists"].clone();
    let specialists = listed.as_array().unwrap();
    assert_eq!(
        specialists[..specialists.len() - 1],
        shipped_list.as_array().unwrap()[..]
    );
    assert_eq!(
        specialists.last().unwrap(),
        &serde_json::json!({"name": "t2d-alone", "contributes": "answers", "dir": "experts/t2d-alone"}),
        "--out leaves --model as it was and lists the new specialist last"
    );
    assert!(!model.join("experts.json").exists());
    // The expert's word vectors are the model's own file: not copied, but pointed at.
    let copied = model.join("experts/t2d-alone");
    assert!(!copied.join("word_vectors.safetensors").exists());
    assert_eq!(
        json(&copied.join("swarm.json"))["column_words"]["vectors"]["path"],
        "../../word_vectors.safetensors"
    );
    // An expert taken from another model's `experts/` already points at that model's vectors:
    // joining it to a third model leaves that model's own vectors in place. (The command's
    // former name and flag still work.)
    let again = work.path().join("again");
    stdout(&colswarm(&[
        "add-expert",
        "--model",
        shipped.to_str().unwrap(),
        "--expert",
        &format!("t2d-again={}", copied.display()),
        "--out",
        again.to_str().unwrap(),
    ]));
    assert!(again.join("word_vectors.safetensors").exists());
    stdout(&colswarm(&[
        "annotate",
        "--model",
        again.to_str().unwrap(),
        "datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv",
    ]));

    let input = data.path().to_str().unwrap();
    let eval =
        |dir: &Path, name: &str, flag: &str| -> (serde_json::Value, Vec<serde_json::Value>) {
            let report = work.path().join(format!("{name}.json"));
            let predictions = work.path().join(format!("{name}.jsonl"));
            let mut args = vec![
                "eval",
                "--model",
                dir.to_str().unwrap(),
                "--format",
                "t2d",
                "--input",
                input,
                "--task",
                "cta",
                "--json",
                "--predictions",
                predictions.to_str().unwrap(),
            ];
            if !flag.is_empty() {
                args.push(flag);
            }
            std::fs::write(&report, stdout(&colswarm(&args))).unwrap();
            (json(&report), probabilities(&predictions))
        };
    let (_, alone) = eval(&model, "alone", "--no-specialists");
    let (_, shipped_alone) = eval(&shipped, "shipped-alone", "--no-specialists");
    // (Probability lists are compared with assert!: a failure would print thousands of them.)
    assert!(
        alone == shipped_alone,
        "without specialists no expert opens"
    );
    let (report, with) = eval(&model, "with", "");
    assert!(
        with != alone,
        "an expert that opens moves the t2d probabilities"
    );
    let (_, every) = eval(&model, "every", "--all-specialists");
    let (_, routed) = eval(&shipped, "shipped-routed", "");
    let gates = report["routing"]["specialists"].as_array().unwrap();
    let names: Vec<&str> = gates.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "wikitables-expert",
            "gittables-expert",
            "t2d-expert",
            "t2d-silver",
            "t2d-alone"
        ]
    );
    assert_eq!(
        gates.last().unwrap()["overall"]["rate"],
        1.0,
        "without --open-below the expert opens on every table"
    );

    // Opening below a probability no answer reaches: the same as every table; below 0: none,
    // the shipped model as it was.
    for (open_below, same_as) in [("1", &with), ("0", &routed)] {
        let gated = work.path().join(format!("gated-{open_below}"));
        stdout(&colswarm(&[
            "add-specialist",
            "--model",
            shipped.to_str().unwrap(),
            "--specialist",
            &format!("t2d-alone={}", expert.display()),
            "--open-below",
            open_below,
            "--out",
            gated.to_str().unwrap(),
        ]));
        let (_, got) = eval(&gated, &format!("gated-{open_below}"), "");
        assert!(&got == same_as, "--open-below {open_below}");
        // --all-specialists opens every expert whatever the primary's confidence.
        let (_, all) = eval(&gated, &format!("all-{open_below}"), "--all-specialists");
        assert!(all == every, "--open-below {open_below} --all-specialists");
    }

    // annotate reports the expert beside the specialists.
    let table = root().join("datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv");
    let annotation: serde_json::Value = serde_json::from_str(
        stdout(&colswarm(&[
            "annotate",
            "--model",
            model.to_str().unwrap(),
            table.to_str().unwrap(),
        ]))
        .trim(),
    )
    .unwrap();
    let router = annotation["router"].as_array().unwrap();
    let last = router.last().unwrap();
    assert_eq!(last["specialist"], "t2d-alone", "{last}");
    assert_eq!(last["active"], true);

    // Asked for WikiTables types alone (relations are still all asked for), the expert that
    // knows only GitTables' labels is not read, the one that knows T2D's relations is, and the
    // WikiTables types are those of the full annotation.
    let only: serde_json::Value = serde_json::from_str(
        stdout(&colswarm(&[
            "annotate",
            "--model",
            model.to_str().unwrap(),
            "--namespace",
            "wikitables",
            table.to_str().unwrap(),
        ]))
        .trim(),
    )
    .unwrap();
    let gate = |a: &serde_json::Value, name: &str| -> serde_json::Value {
        let router = a["router"].as_array().unwrap();
        router
            .iter()
            .find(|g| g["specialist"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(gate(&annotation, "gittables-expert")["active"], true);
    assert_eq!(gate(&only, "gittables-expert")["active"], false);
    assert_eq!(gate(&only, "t2d-alone")["active"], true);
    let wikitables = |a: &serde_json::Value| -> Vec<serde_json::Value> {
        a["columns"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["types"].as_array().unwrap().clone())
            .filter(|t| t["namespace"] == "wikitables")
            .collect()
    };
    assert_eq!(wikitables(&only), wikitables(&annotation));
}

#[test]
fn experts_that_cannot_stand_beside_the_primary_are_refused_and_nothing_is_written() {
    let data = t2d_subset(6);
    let work = tempfile::tempdir().unwrap();
    let expert = train_expert(data.path(), &work.path().join("expert"), "8");
    let shipped = root().join("models/colswarm-small");
    let out = work.path().join("model");
    let refused = |spec: String, extra: &[&str]| -> String {
        let mut args = vec![
            "add-specialist",
            "--model",
            shipped.to_str().unwrap(),
            "--specialist",
            &spec,
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let run = colswarm(&args);
        assert!(!run.status.success(), "{spec} {extra:?} was accepted");
        assert!(!out.exists(), "{spec} {extra:?} wrote {}", out.display());
        String::from_utf8_lossy(&run.stderr).into_owned()
    };
    let expert_arg = |name: &str| format!("{name}={}", expert.display());

    let err = refused(expert_arg("t2d-expert"), &[]);
    assert!(
        err.contains("specialist") && err.contains("\"t2d-expert\""),
        "{err}"
    );
    let err = refused(expert_arg("a/b"), &[]);
    assert!(err.contains("letters, digits"), "{err}");
    let err = refused(expert_arg("x"), &["--open-below", "1.5"]);
    assert!(err.contains("not a probability"), "{err}");
    let err = refused(format!("x={}", work.path().join("nowhere").display()), &[]);
    assert!(err.contains("nowhere"), "{err}");

    // An expert reading four rows where the primary reads eight would be handed tables it was
    // not trained to read.
    let other = train_expert(data.path(), &work.path().join("other"), "4");
    let err = refused(format!("x={}", other.display()), &[]);
    assert!(
        err.contains("serializes tables") && err.contains("max_rows: 4"),
        "{err}"
    );
    // The shipped model has specialists: it cannot be an expert.
    let err = refused(format!("x={}", shipped.display()), &[]);
    assert!(err.contains("no specialists"), "{err}");
}

/// `train-router --experts` trains the router and the mix of the shipped model's experts on a
/// few T2D tables: the model it writes carries the trained routing (and annotates); a finished
/// run asked again rebuilds the same model from its last checkpoint; `--mix-only` keeps the
/// router's decisions.
#[test]
fn the_experts_routing_trains_resumes_and_can_leave_the_router_as_it_is() {
    let data = t2d_subset(8);
    let work = tempfile::tempdir().unwrap();
    // The shipped model with its T2D experts opening below 0.3: a gate far from its threshold
    // on every table is saturated and would not move in six steps.
    let shipped = work.path().join("base");
    stdout(&colswarm(&[
        "calibrate",
        "--model",
        root().join("models/colswarm-small").to_str().unwrap(),
        "--out",
        shipped.to_str().unwrap(),
        "--open-below",
        "t2d-expert=0.3",
        "--open-below",
        "t2d-silver=0.3",
    ]));
    let train = format!("t2d=t2d:{}", data.path().display());
    let route = |out: &Path, extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "train-router",
            "--experts",
            "--quiet",
            "--model",
            shipped.to_str().unwrap(),
            "--train",
            &train,
            "--steps",
            "6",
            "--eval-every",
            "3",
            "--batch-size",
            "4",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        serde_json::from_str(&stdout(&colswarm(&args))).unwrap()
    };
    let run = work.path().join("run");
    let summary = route(&run, &[]);
    assert_eq!(summary["steps"], 6);
    let model = run.join("model");
    assert_eq!(Path::new(summary["model_dir"].as_str().unwrap()), model);
    let routing = json(&model.join("swarm.json"))["expert_routing"].clone();
    assert_eq!(routing["path"], "expert_routing.safetensors", "{routing}");
    let said = stdout(&colswarm(&["inspect", model.to_str().unwrap()]));
    assert!(said.contains("where the trained router opens it"), "{said}");
    stdout(&colswarm(&[
        "annotate",
        "--model",
        model.to_str().unwrap(),
        "datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv",
    ]));
    let log = std::fs::read_to_string(run.join("log.jsonl")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("\"event\":\"step\"") && l.contains("\"gain\"")),
        "{log}"
    );

    // Asked again, the finished run writes the same model from its last checkpoint.
    let trained = std::fs::read(model.join("expert_routing.safetensors")).unwrap();
    std::fs::remove_dir_all(&model).unwrap();
    route(&run, &[]);
    assert_eq!(
        std::fs::read(model.join("expert_routing.safetensors")).unwrap(),
        trained
    );

    // The mix alone: every table opens exactly the experts the shipped model opens.
    let mix_only = work.path().join("mix-only");
    route(&mix_only, &["--mix-only", "--mix-start", "0"]);
    let rates = |dir: &Path| -> serde_json::Value {
        let report: serde_json::Value = serde_json::from_str(&stdout(&colswarm(&[
            "eval",
            "--model",
            dir.to_str().unwrap(),
            "--format",
            "t2d",
            "--input",
            data.path().to_str().unwrap(),
            "--json",
        ])))
        .unwrap();
        report["routing"]["specialists"].clone()
    };
    assert_eq!(rates(&mix_only.join("model")), rates(&shipped));
}

/// The router's gates of an annotation, by name, and the annotation without them.
fn split_router(annotation: &str) -> (Vec<String>, serde_json::Value) {
    let mut value: serde_json::Value = serde_json::from_str(annotation.trim()).unwrap();
    let router = value.as_object_mut().unwrap().remove("router").unwrap();
    let names = router
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["specialist"].as_str().unwrap().to_string())
        .collect();
    (names, value)
}

#[test]
fn removing_specialists_of_either_kind_keeps_every_other_answer() {
    let shipped = root().join("models/colswarm-small");
    let work = tempfile::tempdir().unwrap();
    let table = root().join("datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv");
    let annotate = |dir: &Path| {
        stdout(&colswarm(&[
            "annotate",
            "--model",
            dir.to_str().unwrap(),
            table.to_str().unwrap(),
        ]))
    };
    let manifest = |dir: &Path| json(&dir.join("swarm.json"));

    // An unknown name is refused before anything is written.
    let out = work.path().join("none");
    let run = colswarm(&[
        "remove-specialist",
        "--model",
        shipped.to_str().unwrap(),
        "--specialist",
        "nobody",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("\"nobody\"") && err.contains("t2d-silver"),
        "{err}"
    );
    assert!(!out.exists());

    // State specialists the router keeps closed (threshold 1) change no answer: without them
    // the swarm answers as before, and their files are gone.
    let data = t2d_subset(6);
    let swarm = state_swarm(data.path(), &work.path().join("swarm"));
    stdout(&colswarm(&[
        "calibrate",
        "--model",
        swarm.to_str().unwrap(),
        "--router-threshold",
        "1",
    ]));
    let stateless = work.path().join("stateless");
    let mut args = vec![
        "remove-specialist",
        "--model",
        swarm.to_str().unwrap(),
        "--out",
        stateless.to_str().unwrap(),
    ];
    for name in STATE_SPECIALISTS {
        args.extend(["--specialist", name]);
    }
    let said = stdout(&colswarm(&args));
    assert!(said.contains("now has no specialist"), "{said}");
    let listed = manifest(&stateless);
    assert!(listed["router"].is_null() && listed["fusion"].is_null());
    assert!(listed["specialists"].as_array().unwrap().is_empty());
    for file in ["router.safetensors", "fusion.safetensors", "specialists"] {
        assert!(swarm.join(file).exists(), "{file}");
        assert!(!stateless.join(file).exists(), "{file}");
    }
    let (names, answers) = split_router(&annotate(&stateless));
    let (swarm_names, swarm_answers) = split_router(&annotate(&swarm));
    assert_eq!(answers, swarm_answers);
    assert_eq!(swarm_names, STATE_SPECIALISTS);
    assert!(names.is_empty(), "{names:?}");
    let inspected = stdout(&colswarm(&["inspect", stateless.to_str().unwrap()]));
    assert!(
        inspected.contains("state fusion: none") && !inspected.contains("(state)"),
        "{inspected}"
    );

    // An expert removed in place: out of the list and the router, its directory deleted;
    // the others keep their places.
    let copy = work.path().join("shipped");
    stdout(&colswarm(&[
        "remove-specialist",
        "--model",
        shipped.to_str().unwrap(),
        "--specialist",
        "t2d-silver",
        "--out",
        copy.to_str().unwrap(),
    ]));
    stdout(&colswarm(&[
        "remove-specialist",
        "--model",
        copy.to_str().unwrap(),
        "--specialist",
        "gittables-expert",
    ]));
    assert!(!copy.join("experts/gittables-expert").exists());
    assert!(!copy.join("experts/t2d-silver").exists());
    assert!(copy.join("experts/t2d-expert").is_dir());
    assert!(!work.path().join("shipped.removing").exists());
    let (names, _) = split_router(&annotate(&copy));
    assert_eq!(names, ["wikitables-expert", "t2d-expert"]);
    let written = manifest(&copy).to_string();
    assert!(!written.contains("t2d-silver") && !written.contains("gittables-expert"));
}
