//! Steps whose numbers are still on the device: each step's loss, its count of non-finite
//! gradients and the numbers its log entry reports stay where they were computed until the
//! [`Driver`](super::Driver) reads all of them back in one transfer, once per logging interval.
//! A GPU then runs step after step without waiting for the host; the driver learns only at the
//! read-back whether a step was finite, and takes it back if it was not.

use burn::tensor::Tensor;

/// One optimistically taken step, its numbers not read yet.
pub(crate) struct PendingStep {
    /// The step's index (its counters before it ran).
    pub(crate) step: usize,
    /// Its epoch (in a step schedule, `step / batches`).
    pub(crate) epoch: usize,
    /// Its batch within the epoch.
    pub(crate) batch: usize,
    /// `[1]`, detached.
    pub(crate) loss: Tensor<1>,
    /// `[1]`: how many parameter tensors got a non-finite gradient; `None`: none has one.
    pub(crate) non_finite: Option<Tensor<1>>,
    /// The log entry's numbers computed on the device (`[1]` each, detached).
    pub(crate) scalars: Vec<(&'static str, Tensor<1>)>,
    /// The log entry's host fields.
    pub(crate) entry: serde_json::Value,
    pub(crate) tables: Vec<String>,
    pub(crate) columns: usize,
    pub(crate) tokens: usize,
    pub(crate) progress: Option<String>,
}

/// A [`PendingStep`]'s numbers on the host.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ReadStep {
    pub(crate) loss: f64,
    /// Parameter tensors with a non-finite gradient (counted only for a finite loss, as a
    /// non-finite loss is reported as it is).
    pub(crate) non_finite: usize,
    pub(crate) scalars: Vec<(&'static str, f64)>,
}

impl ReadStep {
    /// Whether the step can stand: a finite loss and finite gradients.
    pub(crate) fn is_finite(&self) -> bool {
        self.loss.is_finite() && self.non_finite == 0
    }
}

impl PendingStep {
    /// The log entry of the step, read as `read` says, with its `event` and `step` (the step
    /// count after it).
    pub(crate) fn log_entry(&self, read: &ReadStep) -> serde_json::Value {
        let mut entry = self.entry.clone();
        if !entry.is_object() {
            entry = serde_json::json!({});
        }
        entry["event"] = "step".into();
        entry["step"] = (self.step + 1).into();
        entry["loss"] = read.loss.into();
        for (key, value) in &read.scalars {
            entry[*key] = (*value).into();
        }
        entry
    }
}

/// Reads the numbers of `steps` back to the host, all in one transfer.
pub(crate) fn read_back(steps: &[PendingStep]) -> Vec<ReadStep> {
    let Some(first) = steps.first() else {
        return Vec::new();
    };
    let device = first.loss.device();
    let mut parts = Vec::new();
    for step in steps {
        parts.push(step.loss.clone());
        if let Some(count) = &step.non_finite {
            parts.push(count.clone().to_device(&device));
        }
        parts.extend(
            step.scalars
                .iter()
                .map(|(_, t)| t.clone().to_device(&device)),
        );
    }
    let values: Vec<f32> = Tensor::cat(parts, 0)
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .unwrap_or_default();
    let mut values = values.into_iter().map(f64::from);
    steps
        .iter()
        .map(|step| {
            let loss = values.next().unwrap_or(f64::NAN);
            let non_finite = match step.non_finite {
                Some(_) => values.next().unwrap_or(f64::NAN),
                None => 0.0,
            };
            let scalars = step
                .scalars
                .iter()
                .map(|(key, _)| (*key, values.next().unwrap_or(f64::NAN)))
                .collect();
            ReadStep {
                loss,
                // A count read as NaN (never expected) counts as a bad gradient.
                non_finite: if !loss.is_finite() {
                    0
                } else if non_finite.is_finite() {
                    non_finite as usize
                } else {
                    1
                },
                scalars,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;

    fn scalar(v: f32) -> Tensor<1> {
        Tensor::<1>::from_floats([v], &Device::flex())
    }

    fn pending(step: usize, loss: f32, bad: Option<f32>, cta: Option<f32>) -> PendingStep {
        PendingStep {
            step,
            epoch: 0,
            batch: step,
            loss: scalar(loss),
            non_finite: bad.map(scalar),
            scalars: cta.map(|v| ("cta_loss", scalar(v))).into_iter().collect(),
            entry: serde_json::json!({ "epoch": 0 }),
            tables: vec![format!("t{step}")],
            columns: 1,
            tokens: 2,
            progress: None,
        }
    }

    #[test]
    fn one_read_gives_every_step_its_own_numbers() {
        let steps = [
            pending(0, 1.5, Some(0.0), Some(0.25)),
            pending(1, 2.5, None, None),
            pending(2, 0.5, Some(2.0), Some(0.75)),
            pending(3, f32::NAN, Some(3.0), None),
        ];
        let read = read_back(&steps);
        assert_eq!(read[0].loss, 1.5);
        assert_eq!(read[0].scalars, [("cta_loss", 0.25)]);
        assert!(read[0].is_finite() && read[1].is_finite());
        assert_eq!((read[1].loss, read[1].non_finite), (2.5, 0));
        assert!(read[1].scalars.is_empty());
        assert_eq!((read[2].non_finite, read[2].scalars[0].1), (2, 0.75));
        assert!(!read[2].is_finite());
        // A non-finite loss is reported as it is, its gradients not counted.
        assert!(read[3].loss.is_nan() && read[3].non_finite == 0 && !read[3].is_finite());
        let entry = steps[2].log_entry(&read[2]);
        assert_eq!(entry["step"], 3);
        assert_eq!(entry["cta_loss"], 0.75);
        assert_eq!(entry["event"], "step");
        assert!(read_back(&[]).is_empty());
    }
}
