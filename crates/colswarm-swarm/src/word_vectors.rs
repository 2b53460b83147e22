//! Static word vectors: a column's mean word vector (of its cells' words and of its header's),
//! projected to the model's width and added to the column's representation, where the n-gram
//! embedding enters.
//!
//! Vectors such as GloVe's are knowledge for free: a lookup per word, learned on billions of
//! words of text, that places `Lyon` near `Paris` though no training column held it. The table
//! is fixed (it ships with the model as f16); only the projection is trained. The projection
//! starts at zero, so adding word vectors to a trained model leaves its outputs unchanged until
//! training moves it.
//!
//! The file is a safetensors file with one f16 tensor `vectors`, `[words, dim]`, whose
//! metadata `words` lists the words, one per line, in row order.

use std::collections::HashMap;
use std::path::Path;

use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::{Device, Tensor, TensorData};
use colswarm_rwkv::checkpoint::write_atomically;
use half::f16;
use safetensors::{Dtype, SafeTensors, tensor::TensorView};

use crate::error::SwarmError;

/// The tensor and metadata names of a word-vector file.
const VECTORS: &str = "vectors";
const WORDS: &str = "words";

/// A fixed table of word vectors.
#[derive(Clone, Debug, PartialEq)]
pub struct WordVectors {
    dim: usize,
    words: Vec<String>,
    index: HashMap<String, usize>,
    /// `[words, dim]`, row-major.
    vectors: Vec<f32>,
}

impl WordVectors {
    /// A table of `words`, row `i` of `vectors` (`[words, dim]`, row-major) being word `i`'s.
    /// Fails on a size mismatch, an empty or repeated word, or a word holding a newline.
    pub fn new(words: Vec<String>, vectors: Vec<f32>, dim: usize) -> Result<Self, SwarmError> {
        if dim == 0 || vectors.len() != words.len() * dim {
            return Err(SwarmError::Input(format!(
                "word vectors: {} words of dimension {dim} need {} values, got {}",
                words.len(),
                words.len() * dim,
                vectors.len()
            )));
        }
        let mut index = HashMap::with_capacity(words.len());
        for (row, word) in words.iter().enumerate() {
            if word.is_empty() || word.contains('\n') {
                return Err(SwarmError::Input(format!(
                    "word vectors: word {row} is empty or holds a newline"
                )));
            }
            if index.insert(word.clone(), row).is_some() {
                return Err(SwarmError::Input(format!(
                    "word vectors: `{word}` appears twice"
                )));
            }
        }
        Ok(Self {
            dim,
            words,
            index,
            vectors,
        })
    }

    /// Reads a word-vector file (see the module docs); errors name the file.
    pub fn load(path: &Path) -> Result<Self, SwarmError> {
        let bytes = std::fs::read(path).map_err(|source| SwarmError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let invalid = |reason: String| SwarmError::Manifest {
            path: path.to_path_buf(),
            reason: format!("not a word-vector file: {reason}"),
        };
        let (_, metadata) =
            SafeTensors::read_metadata(&bytes).map_err(|e| invalid(e.to_string()))?;
        let words: Vec<String> = metadata
            .metadata()
            .as_ref()
            .and_then(|m| m.get(WORDS))
            .ok_or_else(|| invalid(format!("no `{WORDS}` metadata")))?
            .split('\n')
            .map(str::to_string)
            .collect();
        let tensors = SafeTensors::deserialize(&bytes).map_err(|e| invalid(e.to_string()))?;
        let view = tensors
            .tensor(VECTORS)
            .map_err(|e| invalid(format!("tensor `{VECTORS}`: {e}")))?;
        let [rows, dim] = view.shape() else {
            return Err(invalid(format!(
                "tensor `{VECTORS}` has shape {:?}, not [words, dim]",
                view.shape()
            )));
        };
        if view.dtype() != Dtype::F16 || *rows != words.len() {
            return Err(invalid(format!(
                "tensor `{VECTORS}` is {:?} {:?} for {} words; expected F16 [{}, dim]",
                view.dtype(),
                view.shape(),
                words.len(),
                words.len()
            )));
        }
        let vectors = view
            .data()
            .chunks_exact(2)
            .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect();
        Self::new(words, vectors, *dim).map_err(|e| invalid(e.to_string()))
    }

    /// Writes the table as f16, atomically.
    pub fn save(&self, path: &Path) -> Result<(), SwarmError> {
        let data: Vec<u8> = self
            .vectors
            .iter()
            .flat_map(|&v| f16::from_f32(v).to_le_bytes())
            .collect();
        let view = TensorView::new(Dtype::F16, vec![self.words.len(), self.dim], &data)
            .map_err(|e| SwarmError::Input(format!("word vectors: {e}")))?;
        let metadata = HashMap::from([(WORDS.to_string(), self.words.join("\n"))]);
        let bytes = safetensors::serialize([(VECTORS, view)], Some(metadata)).map_err(|e| {
            SwarmError::Manifest {
                path: path.to_path_buf(),
                reason: e.to_string(),
            }
        })?;
        Ok(write_atomically(path, &bytes)?)
    }

    /// Dimension of a vector.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether the table holds no word.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The vector of `word` (looked up as given: callers lower-case).
    pub fn get(&self, word: &str) -> Option<&[f32]> {
        let row = *self.index.get(word)?;
        Some(&self.vectors[row * self.dim..(row + 1) * self.dim])
    }

    /// A column's features, `2 · dim` values: the mean vector of the known words among `cells`,
    /// then of those among `header` (zeros where none is known).
    pub fn column_features(&self, cells: &[String], header: &[String]) -> Vec<f32> {
        let mut out = self.mean(cells);
        out.extend(self.mean(header));
        out
    }

    /// The mean vector of the known words among `words`, `dim` values (zeros when none is
    /// known).
    pub fn mean<S: AsRef<str>>(&self, words: &[S]) -> Vec<f32> {
        let mut out = vec![0.0; self.dim];
        let mut known = 0usize;
        for vector in words.iter().filter_map(|w| self.get(w.as_ref())) {
            known += 1;
            for (sum, v) in out.iter_mut().zip(vector) {
                *sum += v;
            }
        }
        if known > 0 {
            out.iter_mut().for_each(|v| *v /= known as f32);
        }
        out
    }
}

/// The word-vector features a model reads: the vectors' dimension and how many cells of a
/// column give words.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub struct ColumnWordsConfig {
    /// Dimension of a word vector.
    pub dim: usize,
    /// Non-null cells per column that give words.
    #[config(default = 20)]
    pub max_cells: usize,
    /// Also the table's topic: the mean vector of the words of all its columns (headers and
    /// cells), the same for every column of the table.
    #[config(default = false)]
    pub table_topic: bool,
}

/// The learned map from a column's word-vector features to the model's width.
#[derive(Module, Debug)]
pub struct WordProjection {
    /// `[width, d_model]` ([`ColumnWordsConfig::width`]).
    pub weight: Param<Tensor<2>>,
}

impl ColumnWordsConfig {
    /// Features per column: the cells' and the header's mean vectors, and the table's topic
    /// when asked for.
    pub fn width(&self) -> usize {
        self.dim.saturating_mul(2 + usize::from(self.table_topic))
    }

    /// An all-zero projection to `d_model` columns.
    pub fn init(&self, d_model: usize, device: &Device) -> WordProjection {
        WordProjection {
            weight: Param::from_tensor(Tensor::zeros([self.width(), d_model], device)),
        }
    }

    /// Parameters of the projection to `d_model` columns.
    pub fn num_params(&self, d_model: usize) -> usize {
        self.width().saturating_mul(d_model)
    }
}

impl WordProjection {
    /// Projects each column's features ([`WordVectors::column_features`]). A row of the wrong
    /// length is an error, not a panic: features come from data.
    ///
    /// # Shapes
    ///
    /// - `features`: `m` rows of [`ColumnWordsConfig::width`] values → `[m, d_model]`
    pub fn forward(&self, features: &[&[f32]]) -> Result<Tensor<2>, SwarmError> {
        let [width, _] = self.weight.dims();
        if let Some(row) = features.iter().position(|f| f.len() != width) {
            return Err(SwarmError::Input(format!(
                "column row {row}: {} word-vector features, the model reads {width}",
                features[row].len()
            )));
        }
        let flat: Vec<f32> = features.iter().flat_map(|f| f.iter().copied()).collect();
        let x = Tensor::<2>::from_data(
            TensorData::new(flat, [features.len(), width]),
            &self.weight.device(),
        );
        Ok(x.matmul(self.weight.val()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Tolerance;

    fn table() -> WordVectors {
        let words = ["paris", "lyon", "city"].map(String::from).to_vec();
        WordVectors::new(words, vec![1.0, 0.0, 0.0, 1.0, 0.5, 0.5], 2).unwrap()
    }

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn features_are_the_means_of_the_known_words() {
        let t = table();
        let f = t.column_features(&strings(&["paris", "lyon", "nowhere"]), &strings(&["city"]));
        assert_eq!(f, [0.5, 0.5, 0.5, 0.5]);
        assert_eq!(
            t.column_features(&strings(&["x"]), &[]),
            [0.0; 4],
            "no known word gives zeros"
        );
    }

    #[test]
    fn a_file_round_trips_through_f16() {
        let dir = std::env::temp_dir().join(format!("colswarm-words-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("words.safetensors");
        let words = ["a", "b"].map(String::from).to_vec();
        let original = WordVectors::new(words, vec![0.1, -2.5, 3.0, 1e-3], 2).unwrap();
        original.save(&path).unwrap();
        let loaded = WordVectors::load(&path).unwrap();
        assert_eq!(loaded.len(), 2);
        for (a, b) in original.vectors.iter().zip(&loaded.vectors) {
            assert!((a - b).abs() <= a.abs() * 1e-3, "{a} vs {b}");
        }
        std::fs::write(&path, b"not safetensors").unwrap();
        let error = WordVectors::load(&path).unwrap_err().to_string();
        assert!(
            error.contains("words.safetensors") && error.contains("not a word-vector file"),
            "{error}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_tables_are_refused() {
        let words = |w: &[&str]| strings(w);
        assert!(WordVectors::new(words(&["a"]), vec![1.0], 2).is_err());
        assert!(WordVectors::new(words(&["a", "a"]), vec![1.0; 4], 2).is_err());
        assert!(WordVectors::new(words(&["a\nb"]), vec![1.0; 2], 2).is_err());
    }

    #[test]
    fn the_projection_starts_at_zero_and_maps_features() {
        let device = Device::flex();
        let config = ColumnWordsConfig::new(1);
        let zero = config.init(3, &device);
        zero.forward(&[&[1.0, 2.0]])
            .unwrap()
            .into_data()
            .assert_approx_eq::<f32>(&TensorData::zeros::<f32, _>([1, 3]), Tolerance::default());
        assert_eq!(config.num_params(3), zero.num_params());
        let topic = config.with_table_topic(true);
        assert_eq!((topic.width(), topic.num_params(3)), (3, 9));
        // weight = [[1, 0, 2], [0, 1, 0]]: row [x, y] maps to [x, y, 2x].
        let projection = WordProjection {
            weight: Param::from_tensor(Tensor::from_data(
                TensorData::new(vec![1.0f32, 0.0, 2.0, 0.0, 1.0, 0.0], [2, 3]),
                &device,
            )),
        };
        let out = projection.forward(&[&[1.0, 2.0], &[0.5, 0.0]]).unwrap();
        let expected = TensorData::new(vec![1.0f32, 2.0, 2.0, 0.5, 0.0, 1.0], [2, 3]);
        out.into_data()
            .assert_approx_eq::<f32>(&expected, Tolerance::default());
        let error = projection.forward(&[&[1.0]]).unwrap_err().to_string();
        assert!(
            error.contains("column row 0: 1 word-vector features"),
            "{error}"
        );
    }
}
