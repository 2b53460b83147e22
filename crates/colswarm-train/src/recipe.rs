//! Training recipes: a supervised run's settings in a TOML file, so that the experiment knobs
//! live in a file that is checked in, read and diffed, not in a long command line.
//!
//! A recipe has the sections of [`TrainConfig`] (`[model]`, `[data]`, `[data.serialize]`,
//! `[optimizer]`, `[loss]`, `[regularization]`, `[stopping]`, `[run]`) and `[averaging]`. Data
//! sets are written as on the command line (`"t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#train"`).
//! Every key a recipe leaves out keeps the library's default ([`TrainConfig::default`]), so a
//! recipe may hold only what it changes; a key the library does not know is an error that names
//! it, so a typo cannot be ignored. Relative paths are relative to the directory a command runs
//! in, as on the command line.
//!
//! ```
//! use colswarm_train::Recipe;
//!
//! let mut recipe = Recipe::parse(
//!     "[model]\nd_model = 32\n\n[stopping]\nepochs = 4\n",
//!     "my-recipe.toml",
//! )?;
//! recipe.set("optimizer.learning_rate=1e-3")?;
//! assert_eq!(recipe.train.model.d_model, 32);
//! assert_eq!(recipe.train.stopping.epochs, 4);
//! assert_eq!(recipe.train.optimizer.learning_rate, 1e-3);
//! assert!(recipe.set("model.d_modle=32").is_err());
//! # Ok::<(), colswarm_train::TrainError>(())
//! ```

use std::path::Path;

use colswarm_model::SerializeSettings;
use colswarm_tables::DataSpec;
use serde::{Deserialize, Serialize};

use crate::error::TrainError;
use crate::run::{OptimizerSettings, RunSettings};
use crate::supervised::{
    DataSettings, LossSettings, ModelSettings, Regularization, Stopping, TrainConfig,
};

/// A supervised run's settings and what follows the run ([`Recipe::average_last`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recipe {
    /// The run's configuration. Its data may be empty: the command line then supplies it.
    pub train: TrainConfig,
    /// After a finished run, the element-wise mean of the weights of its last N epochs
    /// ([`crate::average_last_epochs`]); 0: none. At most `run.keep_last`.
    pub average_last: usize,
}

impl Recipe {
    /// Reads a recipe file; errors name it.
    pub fn read(path: &Path) -> Result<Recipe, TrainError> {
        let text = std::fs::read_to_string(path).map_err(|e| TrainError::io(path, e))?;
        Recipe::parse(&text, &path.display().to_string())
    }

    /// Parses a recipe's TOML text over the library's defaults. `origin` (a file name) is named
    /// in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Recipe, TrainError> {
        let given: toml::Table = toml::from_str(text).map_err(|e| recipe_error(origin, e))?;
        let mut merged = Recipe::default().to_table(origin)?;
        merge(&mut merged, &given);
        let recipe = Recipe::from_table(merged, origin)?;
        Recipe::check_known(&given, origin)?;
        recipe.check(origin)?;
        Ok(recipe)
    }

    /// Changes one setting: `KEY=VALUE`, with `KEY` a dotted path as in [`Recipe::to_toml`]
    /// (`optimizer.learning_rate=1e-3`) and `VALUE` a TOML value; a value that is not one (a
    /// bare path) is taken as a string. An empty value (`model.word_vectors=`) puts the
    /// library's default back, which for a file setting is none.
    pub fn set(&mut self, assignment: &str) -> Result<(), TrainError> {
        self.set_all([assignment])
    }

    /// Changes several settings as [`Recipe::set`] does, checking how they fit together only
    /// once all are in: `averaging.last_epochs=12` and `run.keep_last=12` may come in either
    /// order. On an error the recipe is left as it was.
    pub fn set_all<I, S>(&mut self, assignments: I) -> Result<(), TrainError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut changed = self.clone();
        let mut origins = Vec::new();
        for assignment in assignments {
            let origin = format!("--set {}", assignment.as_ref());
            changed = changed.assign(assignment.as_ref(), &origin)?;
            origins.push(origin);
        }
        changed.check(&origins.join(" "))?;
        *self = changed;
        Ok(())
    }

    /// The recipe with one `KEY=VALUE` assignment applied (not yet checked as a whole).
    fn assign(&self, assignment: &str, origin: &str) -> Result<Recipe, TrainError> {
        let (key, value) = assignment
            .split_once('=')
            .filter(|(key, _)| !key.trim().is_empty())
            .ok_or_else(|| recipe_error(origin, "expected KEY=VALUE"))?;
        let path: Vec<&str> = key.trim().split('.').collect();
        if lookup(&every_setting(), &path).is_none() {
            return Err(unknown_setting(origin, key.trim()));
        }
        let mut merged = self.to_table(origin)?;
        let value = if value.trim().is_empty() {
            lookup(&Recipe::default().to_table(origin)?, &path).cloned()
        } else {
            match toml::from_str::<toml::Table>(&format!("value = {value}")) {
                Ok(mut table) => table.remove("value"),
                Err(_) => Some(toml::Value::String(value.to_string())),
            }
        };
        let (last, parents) = path.split_last().expect("split gives one part at least");
        let mut table = &mut merged;
        for part in parents {
            table = match table.get_mut(*part) {
                Some(toml::Value::Table(inner)) => inner,
                _ => return Err(unknown_setting(origin, key.trim())),
            };
        }
        match value {
            Some(value) => table.insert(last.to_string(), value),
            None => table.remove(*last),
        };
        Recipe::from_table(merged, origin)
    }

    /// The recipe as TOML, every setting written out (what `colswarm train --print` shows).
    pub fn to_toml(&self) -> Result<String, TrainError> {
        toml::to_string_pretty(&RecipeFile::from(self)).map_err(|e| recipe_error("recipe", e))
    }

    fn to_table(&self, origin: &str) -> Result<toml::Table, TrainError> {
        toml::Table::try_from(RecipeFile::from(self)).map_err(|e| recipe_error(origin, e))
    }

    fn from_table(table: toml::Table, origin: &str) -> Result<Recipe, TrainError> {
        let file: RecipeFile = toml::Value::Table(table)
            .try_into()
            .map_err(|e| recipe_error(origin, e))?;
        file.into_recipe(origin)
    }

    /// Every key `given` sets is one the recipe has: a key serde skipped was misspelt.
    fn check_known(given: &toml::Table, origin: &str) -> Result<(), TrainError> {
        match unknown_key(given, &every_setting(), "") {
            Some(key) => Err(unknown_setting(origin, &key)),
            None => Ok(()),
        }
    }

    fn check(&self, origin: &str) -> Result<(), TrainError> {
        let keep = self.train.run.keep_last;
        if self.average_last > keep {
            return Err(recipe_error(
                origin,
                format!(
                    "averaging.last_epochs = {} needs run.keep_last ≥ {0} (it is {keep}): only \
                     the last run.keep_last epochs' checkpoints are kept",
                    self.average_last
                ),
            ));
        }
        Ok(())
    }
}

/// Every setting a recipe has, the optional ones included (TOML writes no `None`).
fn every_setting() -> toml::Table {
    let mut recipe = Recipe::default();
    let model = &mut recipe.train.model;
    model.word_vectors = Some(Default::default());
    model.init_from = Some(Default::default());
    recipe.train.optimizer.grad_clip = Some(1.0);
    recipe
        .to_table("the defaults")
        .expect("the defaults are a TOML table")
}

/// The value at a dotted `path`.
fn lookup<'a>(table: &'a toml::Table, path: &[&str]) -> Option<&'a toml::Value> {
    let (first, rest) = path.split_first()?;
    match (table.get(*first)?, rest) {
        (value, []) => Some(value),
        (toml::Value::Table(inner), rest) => lookup(inner, rest),
        _ => None,
    }
}

fn unknown_setting(origin: &str, key: &str) -> TrainError {
    recipe_error(
        origin,
        format!("unknown setting `{key}` (`colswarm train --print` lists them)"),
    )
}

fn recipe_error(origin: &str, reason: impl ToString) -> TrainError {
    TrainError::Recipe {
        origin: origin.to_string(),
        // toml puts the key a value was refused at on a line of its own.
        reason: reason.to_string().trim_end().replace("\nin `", ", in `"),
    }
}

/// Writes `given` over `base`: tables merge key by key, anything else replaces.
fn merge(base: &mut toml::Table, given: &toml::Table) {
    for (key, value) in given {
        match (base.get_mut(key), value) {
            (Some(toml::Value::Table(base)), toml::Value::Table(given)) => merge(base, given),
            _ => {
                base.insert(key.clone(), value.clone());
            }
        }
    }
}

/// The first key of `given` (dotted, from `prefix`) that `known` lacks.
fn unknown_key(given: &toml::Table, known: &toml::Table, prefix: &str) -> Option<String> {
    given.iter().find_map(|(key, value)| {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match (known.get(key), value) {
            (None, _) => Some(path),
            (Some(toml::Value::Table(known)), toml::Value::Table(given)) => {
                unknown_key(given, known, &path)
            }
            _ => None,
        }
    })
}

/// The file layout: [`TrainConfig`]'s groups with data sets as command-line strings.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecipeFile {
    model: ModelSettings,
    data: DataFile,
    optimizer: OptimizerSettings,
    loss: LossSettings,
    regularization: Regularization,
    stopping: Stopping,
    run: RunSettings,
    averaging: Averaging,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DataFile {
    train: Vec<String>,
    dev: Vec<String>,
    max_tables: usize,
    serialize: SerializeSettings,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Averaging {
    last_epochs: usize,
}

impl From<&Recipe> for RecipeFile {
    fn from(recipe: &Recipe) -> Self {
        let config = recipe.train.clone();
        let strings = |specs: &[DataSpec]| specs.iter().map(|s| s.to_string()).collect();
        RecipeFile {
            data: DataFile {
                train: strings(&config.data.train),
                dev: strings(&config.data.dev),
                max_tables: config.data.max_tables,
                serialize: config.data.serialize,
            },
            model: config.model,
            optimizer: config.optimizer,
            loss: config.loss,
            regularization: config.regularization,
            stopping: config.stopping,
            run: config.run,
            averaging: Averaging {
                last_epochs: recipe.average_last,
            },
        }
    }
}

impl RecipeFile {
    fn into_recipe(self, origin: &str) -> Result<Recipe, TrainError> {
        let specs = |list: &[String], key: &str| -> Result<Vec<DataSpec>, TrainError> {
            list.iter()
                .map(|s| {
                    s.parse()
                        .map_err(|e| recipe_error(origin, format!("data.{key}: {e}")))
                })
                .collect()
        };
        Ok(Recipe {
            train: TrainConfig {
                data: DataSettings {
                    train: specs(&self.data.train, "train")?,
                    dev: specs(&self.data.dev, "dev")?,
                    max_tables: self.data.max_tables,
                    serialize: self.data.serialize,
                },
                model: self.model,
                optimizer: self.optimizer,
                loss: self.loss,
                regularization: self.regularization,
                stopping: self.stopping,
                run: self.run,
            },
            average_last: self.averaging.last_epochs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_round_trip_through_toml() {
        let text = Recipe::default().to_toml().unwrap();
        assert_eq!(Recipe::parse(&text, "t").unwrap(), Recipe::default());
        assert_eq!(Recipe::parse("", "t").unwrap(), Recipe::default());
    }

    #[test]
    fn a_recipe_changes_only_what_it_names() {
        let recipe = Recipe::parse(
            "[model]\nd_model = 32\nword_vectors = \"w.safetensors\"\n\
             [data]\ntrain = [\"t2d=t2d:x.tar.gz#train\"]\n[averaging]\nlast_epochs = 2\n",
            "t",
        )
        .unwrap();
        let mut expected = Recipe::default();
        expected.train.model.d_model = 32;
        expected.train.model.word_vectors = Some("w.safetensors".into());
        expected.train.data.train = vec!["t2d=t2d:x.tar.gz#train".parse().unwrap()];
        expected.average_last = 2;
        assert_eq!(recipe, expected);
        assert_eq!(
            Recipe::parse(&recipe.to_toml().unwrap(), "t").unwrap(),
            recipe
        );
    }

    #[test]
    fn set_takes_toml_values_and_bare_strings() {
        let mut recipe = Recipe::default();
        recipe.set("model.init_from=runs/a/best").unwrap();
        recipe.set("optimizer.lr_decay=\"linear\"").unwrap();
        recipe.set("model.hierarchy_closure=false").unwrap();
        recipe
            .set("model.specialists=[{name = \"t2d\", path = \"s.safetensors\"}]")
            .unwrap();
        recipe.set("model.word_vectors=w.safetensors").unwrap();
        assert!(recipe.train.model.word_vectors.is_some());
        recipe.set("model.word_vectors=").unwrap();
        recipe.set("optimizer.batch_size=3").unwrap();
        recipe.set("optimizer.batch_size= ").unwrap();
        assert_eq!(recipe.train.model.init_from, Some("runs/a/best".into()));
        assert_eq!(recipe.train.optimizer.lr_decay, crate::LrDecay::Linear);
        assert!(!recipe.train.model.hierarchy_closure);
        assert_eq!(recipe.train.model.specialists[0].name, "t2d");
        assert_eq!(
            recipe.train.model.word_vectors, None,
            "an empty value resets"
        );
        assert_eq!(recipe.train.optimizer.batch_size, 8);
    }

    #[test]
    fn mistakes_are_named() {
        let message = |e: TrainError| e.to_string();
        let typo = message(Recipe::parse("[model]\nd_modle = 3\n", "r.toml").unwrap_err());
        assert!(
            typo.contains("r.toml") && typo.contains("`model.d_modle`"),
            "{typo}"
        );
        let section = message(Recipe::parse("[modle]\nd_model = 3\n", "r.toml").unwrap_err());
        assert!(section.contains("modle"), "{section}");
        let kind = message(Recipe::parse("[model]\nd_model = \"wide\"\n", "r.toml").unwrap_err());
        assert!(
            kind.contains("r.toml") && kind.contains("d_model"),
            "{kind}"
        );
        let spec = message(Recipe::parse("[data]\ntrain = [\"nonsense\"]\n", "r").unwrap_err());
        assert!(
            spec.contains("data.train") && spec.contains("nonsense"),
            "{spec}"
        );
        let average = message(Recipe::parse("[averaging]\nlast_epochs = 9\n", "r").unwrap_err());
        assert!(average.contains("keep_last"), "{average}");
        // Settings that must fit together are checked once all are set, in either order.
        let mut recipe = Recipe::default();
        let alone = message(recipe.set_all(["averaging.last_epochs=12"]).unwrap_err());
        assert!(alone.contains("keep_last"), "{alone}");
        assert_eq!(
            recipe,
            Recipe::default(),
            "a refused change leaves the recipe"
        );
        recipe
            .set_all(["averaging.last_epochs=12", "run.keep_last=12"])
            .unwrap();
        assert_eq!((recipe.average_last, recipe.train.run.keep_last), (12, 12));
        let mut recipe = Recipe::default();
        assert!(message(recipe.set("stopping.epoch=3").unwrap_err()).contains("stopping.epoch"));
        assert!(message(recipe.set("epochs").unwrap_err()).contains("KEY=VALUE"));
        assert!(message(recipe.set("model.d_model.x=3").unwrap_err()).contains("unknown"));
        assert!(message(recipe.set("model=3").unwrap_err()).contains("model"));
        assert_eq!(
            recipe,
            Recipe::default(),
            "a refused change changes nothing"
        );
    }
}
