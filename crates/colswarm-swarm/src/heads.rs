//! Column annotation heads: CTA (semantic type) and CPA (relation to the subject column).

use burn::config::Config;
use burn::module::Module;
use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::activation::{log_sigmoid, log_softmax, sigmoid, softmax, tanh};
use burn::tensor::{Device, Int, Tensor};
use colswarm_rwkv::init::ParamFactory;

/// Whether a label set allows one label per target or several.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum LabelKind {
    /// Exactly one label per target: softmax and cross-entropy.
    SingleLabel,
    /// Any subset of labels: per-label sigmoid and binary cross-entropy.
    MultiLabel,
}

/// Configuration of a [`ColumnHead`].
#[derive(Config, Debug, PartialEq)]
pub struct ColumnHeadConfig {
    /// Width of the inputs (the primary's `d_model`).
    pub d_model: usize,
    /// Number of labels.
    pub n_labels: usize,
    /// Single- or multi-label.
    pub kind: LabelKind,
    /// Hidden width of the two-layer head.
    #[config(default = 256)]
    pub d_hidden: usize,
    /// `true` for a CPA head, which reads `(h_subject, h_column, h_subject ⊙ h_column)`.
    #[config(default = false)]
    pub pairwise: bool,
    /// Add a linear map of the inputs to the logits, beside the tanh layer (see
    /// [`ColumnHead::skip`]).
    #[config(default = false)]
    pub linear_skip: bool,
}

/// A two-layer classifier `tanh(x·W1 + b1)·W2 + b2` over per-column representations, with an
/// optional linear skip `+ x·S`.
///
/// As a CTA head, `x = h_column`; as a CPA head (`pairwise`), `x = [h_s, h_c, h_s ⊙ h_c]` for the
/// subject column `s` and another column `c`.
#[derive(Module, Debug)]
pub struct ColumnHead {
    /// Input layer.
    pub hidden: Linear,
    /// Output layer.
    pub output: Linear,
    /// The linear skip, `[d_in, n_labels]`, no bias; it starts at zero. All labels of all
    /// namespaces share the `d_hidden` tanh units: the skip gives each label a direct linear
    /// read of the inputs besides (the linear n-gram classifier's form, over the embedded
    /// n-grams and the primary's states).
    pub skip: Option<Linear>,
    #[module(skip)]
    kind: LabelKind,
    pairwise: bool,
}

impl ColumnHeadConfig {
    /// Builds the head, its weights drawn from `seed`.
    pub fn init(&self, seed: u64, device: &Device) -> ColumnHead {
        let d_in = if self.pairwise {
            3 * self.d_model
        } else {
            self.d_model
        };
        let mut params = ParamFactory::new(seed, device);
        ColumnHead {
            hidden: params.linear(d_in, self.d_hidden, true),
            output: params.linear(self.d_hidden, self.n_labels, true),
            skip: self
                .linear_skip
                .then(|| zero_linear(d_in, self.n_labels, device)),
            kind: self.kind,
            pairwise: self.pairwise,
        }
    }
}

/// A bias-free linear layer at zero.
fn zero_linear(d_input: usize, d_output: usize, device: &Device) -> Linear {
    Linear {
        weight: ParamFactory::new(0, device).constant(0.0, [d_input, d_output]),
        bias: None,
    }
}

impl ColumnHead {
    /// The same head with a linear skip at zero added (kept if it has one), or without it.
    pub fn with_linear_skip(mut self, linear_skip: bool) -> Self {
        match (linear_skip, &self.skip) {
            (true, None) => {
                let [d_in, _] = self.hidden.weight.dims();
                let [_, n_labels] = self.output.weight.dims();
                let device = self.output.weight.device();
                self.skip = Some(zero_linear(d_in, n_labels, &device));
            }
            (false, Some(_)) => self.skip = None,
            _ => {}
        }
        self
    }

    /// The same head answering only `outputs`, indices of its labels in the order given: a
    /// model continued on some of its labels (a branch) starts from its own answers to them.
    ///
    /// # Shapes
    ///
    /// - output layer `[d_hidden, n_labels]` → `[d_hidden, outputs.len()]` (the skip's alike)
    pub fn select_outputs(mut self, outputs: &[usize]) -> Self {
        let [_, n_labels] = self.output.weight.dims();
        assert!(
            !outputs.is_empty() && outputs.iter().all(|&o| o < n_labels),
            "a head keeps one of its {n_labels} outputs at least"
        );
        let device = self.output.weight.device();
        let index: Vec<i64> = outputs.iter().map(|&o| o as i64).collect();
        let index = Tensor::<1, Int>::from_data(index.as_slice(), &device);
        let columns =
            |weight: Tensor<2>| Param::from_tensor(weight.select(1, index.clone()).detach());
        self.output.weight = columns(self.output.weight.val());
        self.output.bias = self
            .output
            .bias
            .as_ref()
            .map(|bias| Param::from_tensor(bias.val().select(0, index.clone()).detach()));
        if let Some(skip) = &mut self.skip {
            skip.weight = columns(skip.weight.val());
        }
        self
    }

    /// The same head answering `outputs`: `Some(o)` its own output `o`, `None` the output of
    /// `fresh` at the same position (a label this head never had, e.g. one a branch's new
    /// data brings). `fresh` has `outputs.len()` outputs and this head's input width.
    ///
    /// # Shapes
    ///
    /// - output layer `[d_hidden, n_labels]` → `[d_hidden, outputs.len()]` (the skip's alike)
    pub fn with_new_outputs(mut self, outputs: &[Option<usize>], fresh: &ColumnHead) -> Self {
        let [_, n_labels] = self.output.weight.dims();
        assert_eq!(
            fresh.output.weight.dims()[1],
            outputs.len(),
            "the fresh head has an output per label"
        );
        let device = self.output.weight.device();
        let joined = |ours: Tensor<2>, theirs: Tensor<2>| {
            Param::from_tensor(Tensor::cat(vec![ours, theirs], 1).detach())
        };
        self.output.weight = joined(self.output.weight.val(), fresh.output.weight.val());
        // A missing bias (or skip) is a zero one.
        let bias = |head: &ColumnHead, n: usize| {
            head.output
                .bias
                .as_ref()
                .map_or_else(|| Tensor::<1>::zeros([n], &device), |b| b.val())
        };
        if self.output.bias.is_some() || fresh.output.bias.is_some() {
            let ours = bias(&self, n_labels);
            let theirs = bias(fresh, outputs.len());
            self.output.bias = Some(Param::from_tensor(
                Tensor::cat(vec![ours, theirs], 0).detach(),
            ));
        }
        if let Some(skip) = &mut self.skip {
            let d_in = skip.weight.dims()[0];
            let theirs = fresh.skip.as_ref().map_or_else(
                || Tensor::<2>::zeros([d_in, outputs.len()], &device),
                |s| s.weight.val(),
            );
            skip.weight = joined(skip.weight.val(), theirs);
        }
        let index: Vec<usize> = outputs
            .iter()
            .enumerate()
            .map(|(i, o)| o.unwrap_or(n_labels + i))
            .collect();
        self.select_outputs(&index)
    }

    /// The same weights as a single- or multi-label head (a branch on single-label namespaces
    /// of a model that also had multi-label ones).
    pub fn with_kind(mut self, kind: LabelKind) -> Self {
        self.kind = kind;
        self
    }

    /// Single- or multi-label.
    pub fn kind(&self) -> LabelKind {
        self.kind
    }

    /// Logits of per-column inputs.
    ///
    /// # Shapes
    ///
    /// - `columns`: `[m, d_model]` → `[m, n_labels]`
    pub fn forward(&self, columns: Tensor<2>) -> Tensor<2> {
        let logits = self
            .output
            .forward(tanh(self.hidden.forward(columns.clone())));
        match &self.skip {
            Some(skip) => logits + skip.forward(columns),
            None => logits,
        }
    }

    /// Logits of (subject, column) pairs (CPA).
    ///
    /// # Shapes
    ///
    /// - `subject`, `column`: `[m, d_model]` → `[m, n_labels]`
    pub fn forward_pair(&self, subject: Tensor<2>, column: Tensor<2>) -> Tensor<2> {
        debug_assert!(self.pairwise, "forward_pair on a non-pairwise head");
        let product = subject.clone() * column.clone();
        self.forward(Tensor::cat(vec![subject, column, product], 1))
    }

    /// Label probabilities: softmax (single-label) or per-label sigmoid (multi-label).
    pub fn probabilities(&self, logits: Tensor<2>) -> Tensor<2> {
        match self.kind {
            LabelKind::SingleLabel => softmax(logits, 1),
            LabelKind::MultiLabel => sigmoid(logits),
        }
    }

    /// Mean loss against multi-hot `targets` (`[m, n_labels]`; one-hot for single-label sets):
    /// cross-entropy for single-label sets, binary cross-entropy averaged over labels for
    /// multi-label sets.
    pub fn loss(&self, logits: Tensor<2>, targets: Tensor<2>) -> Tensor<1> {
        let [m, n] = logits.dims();
        match self.kind {
            LabelKind::SingleLabel => (log_softmax(logits, 1) * targets).sum().neg() / m as f64,
            LabelKind::MultiLabel => {
                let positive = log_sigmoid(logits.clone()) * targets.clone();
                let negative = log_sigmoid(logits.neg()) * (targets.neg() + 1.0);
                (positive + negative).sum().neg() / (m * n) as f64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::TensorData;

    #[test]
    fn single_label_loss_is_cross_entropy() {
        let device = Device::flex();
        let head = ColumnHeadConfig::new(2, 3, LabelKind::SingleLabel).init(0, &device);
        let logits = Tensor::<2>::from_data(TensorData::new(vec![1f32, 2.0, 3.0], [1, 3]), &device);
        let target = Tensor::<2>::from_data(TensorData::new(vec![0f32, 0.0, 1.0], [1, 3]), &device);
        let expected = -(3f32.exp() / (1f32.exp() + 2f32.exp() + 3f32.exp())).ln();
        assert!((head.loss(logits, target).into_scalar::<f32>() - expected).abs() < 1e-5);
    }

    #[test]
    fn multi_label_loss_is_binary_cross_entropy() {
        let device = Device::flex();
        let head = ColumnHeadConfig::new(2, 2, LabelKind::MultiLabel).init(0, &device);
        let logits = Tensor::<2>::from_data(TensorData::new(vec![0f32, 2.0], [1, 2]), &device);
        let target = Tensor::<2>::from_data(TensorData::new(vec![1f32, 0.0], [1, 2]), &device);
        let s = |x: f32| 1.0 / (1.0 + (-x).exp());
        let expected = -(s(0.0).ln() + (1.0 - s(2.0)).ln()) / 2.0;
        assert!((head.loss(logits, target).into_scalar::<f32>() - expected).abs() < 1e-5);
    }

    #[test]
    fn the_skip_starts_at_zero_and_adds_a_linear_map() {
        let device = Device::flex();
        let plain = ColumnHeadConfig::new(3, 2, LabelKind::SingleLabel)
            .with_d_hidden(4)
            .init(5, &device);
        let x = Tensor::<2>::from_data(TensorData::new(vec![0.5f32, -1.0, 2.0], [1, 3]), &device);
        let before = plain.forward(x.clone()).into_data();
        let mut skipped = plain.with_linear_skip(true);
        skipped
            .forward(x.clone())
            .into_data()
            .assert_eq(&before, true);
        // S = [[1, 0], [0, 1], [1, 1]]: x·S = [0.5 + 2, -1 + 2].
        let s = TensorData::new(vec![1f32, 0.0, 0.0, 1.0, 1.0, 1.0], [3, 2]);
        skipped.skip.as_mut().unwrap().weight =
            burn::module::Param::from_tensor(Tensor::from_data(s, &device));
        let after = skipped.forward(x).into_data().try_to_vec::<f32>().unwrap();
        let before = before.try_to_vec::<f32>().unwrap();
        assert!((after[0] - before[0] - 2.5).abs() < 1e-5);
        assert!((after[1] - before[1] - 1.0).abs() < 1e-5);
        assert!(skipped.with_linear_skip(false).skip.is_none());
    }

    #[test]
    fn selected_outputs_answer_as_the_full_head_did() {
        let device = Device::flex();
        let mut head = ColumnHeadConfig::new(3, 5, LabelKind::MultiLabel)
            .with_d_hidden(4)
            .with_linear_skip(true)
            .init(7, &device);
        let skip = head.skip.as_mut().unwrap();
        let values: Vec<f32> = (0..15).map(|i| (i as f32 * 0.37).sin()).collect();
        skip.weight =
            Param::from_tensor(Tensor::from_data(TensorData::new(values, [3, 5]), &device));
        let x = Tensor::<2>::from_data(
            TensorData::new(vec![0.3f32, -1.2, 0.8, 1.5, 0.1, -0.4], [2, 3]),
            &device,
        );
        let full = head
            .forward(x.clone())
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        let chosen = [4, 0, 2];
        let picked = head.clone().select_outputs(&chosen);
        let got = picked
            .forward(x.clone())
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        for row in 0..2 {
            for (j, &o) in chosen.iter().enumerate() {
                assert!((got[row * 3 + j] - full[row * 5 + o]).abs() < 1e-6);
            }
        }
    }

    #[test]
    fn new_outputs_come_from_the_fresh_head_and_known_ones_stay() {
        let device = Device::flex();
        let head = ColumnHeadConfig::new(3, 4, LabelKind::SingleLabel)
            .with_d_hidden(4)
            .with_linear_skip(true)
            .init(7, &device);
        let mut fresh = ColumnHeadConfig::new(3, 3, LabelKind::SingleLabel)
            .with_d_hidden(4)
            .with_linear_skip(true)
            .init(8, &device);
        let values: Vec<f32> = (0..9).map(|i| (i as f32 * 0.37).sin()).collect();
        fresh.skip.as_mut().unwrap().weight =
            Param::from_tensor(Tensor::from_data(TensorData::new(values, [3, 3]), &device));
        let x = Tensor::<2>::from_data(
            TensorData::new(vec![0.3f32, -1.2, 0.8, 1.5, 0.1, -0.4], [2, 3]),
            &device,
        );
        let answers = |h: &ColumnHead| {
            h.forward(x.clone())
                .into_data()
                .try_to_vec::<f32>()
                .unwrap()
        };
        let ours = answers(&head);
        // Output 1 of the new head is new: it is the fresh head's output layer and skip applied
        // to this head's hidden units, so compare the layers rather than the answers.
        let merged = head
            .clone()
            .with_new_outputs(&[Some(3), None, Some(0)], &fresh);
        let got = answers(&merged);
        for row in 0..2 {
            assert!((got[row * 3] - ours[row * 4 + 3]).abs() < 1e-6);
            assert!((got[row * 3 + 2] - ours[row * 4]).abs() < 1e-6);
        }
        let column = |w: &Linear, j: usize| {
            let [d, n] = w.weight.dims();
            let all = w.weight.val().into_data().try_to_vec::<f32>().unwrap();
            (0..d).map(|i| all[i * n + j]).collect::<Vec<_>>()
        };
        assert_eq!(column(&merged.output, 1), column(&fresh.output, 1));
        let skip = |h: &ColumnHead| h.skip.as_ref().unwrap().clone();
        assert_eq!(column(&skip(&merged), 1), column(&skip(&fresh), 1));
        let bias = |h: &ColumnHead| {
            let b = h.output.bias.as_ref().unwrap().val().into_data();
            b.try_to_vec::<f32>().unwrap()
        };
        assert_eq!(bias(&merged)[1], bias(&fresh)[1]);
        assert_eq!(
            merged.hidden.weight.val().into_data(),
            head.hidden.weight.val().into_data()
        );
    }

    #[test]
    fn pairwise_head_reads_three_blocks() {
        let device = Device::flex();
        let head = ColumnHeadConfig::new(4, 5, LabelKind::SingleLabel)
            .with_pairwise(true)
            .with_d_hidden(8)
            .init(0, &device);
        let x = Tensor::<2>::ones([3, 4], &device);
        assert_eq!(head.forward_pair(x.clone(), x).dims(), [3, 5]);
    }
}
