//! One prediction at inference, read back to the host: the primary's logits, then the experts
//! the router opens, their logits mixed in ([`crate::expert_routing`]).

use burn::tensor::Tensor;
use colswarm_swarm::{MixInput, SwarmError, mix_row};
use colswarm_tables::NgramConfig;

use crate::decode::best_probability;
use crate::encode::Example;
use crate::error::ModelError;
use crate::expert_routing::{ExpertRouting, label_namespaces};
use crate::labels::Task;
use crate::model::{Expert, Model, SpecialistUse, rows_of};

/// Host copies of a forward pass's logits, indexed by (table, query).
#[derive(Clone)]
pub struct Outputs {
    /// CTA logits, one row per query.
    pub cta: Vec<Vec<f32>>,
    /// CPA logits per table: `(subject query, object query, logits)`.
    pub cpa: Vec<Vec<(usize, usize, Vec<f32>)>>,
    /// First row of each table.
    pub row_start: Vec<usize>,
    /// Gate probabilities and activity per table: the specialists', then the experts'.
    pub gates: Vec<Vec<(f32, bool)>>,
}

impl Outputs {
    /// The outputs of table `b` alone, for a batch of `rows` columns per table (`examples`).
    pub fn one_table(&self, b: usize, columns: usize) -> Outputs {
        let start = self.row_start[b];
        Outputs {
            cta: self.cta[start..start + columns].to_vec(),
            cpa: vec![self.cpa[b].clone()],
            row_start: vec![0],
            gates: vec![self.gates.get(b).cloned().unwrap_or_default()],
        }
    }
}

impl std::fmt::Debug for Outputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outputs")
            .field("rows", &self.cta.len())
            .finish()
    }
}

/// The namespaces a caller reads from a prediction, as indices into the label space's CTA and
/// CPA lists: a domain expert that knows none of them is not read ([`Model::predict_for`]).
#[derive(Clone, Copy, Debug)]
pub struct Wanted<'a> {
    /// CTA namespaces.
    pub cta: &'a [usize],
    /// CPA namespaces.
    pub cpa: &'a [usize],
}

/// One expert's outputs on some of a batch's tables: each table's place among them (`None`:
/// not read) and the outputs (`None` when it read none).
#[derive(Clone, Debug)]
pub struct ExpertOutputs {
    /// `slot[table]`: the table's index in `outputs`.
    pub slot: Vec<Option<usize>>,
    /// What it predicted for the tables it read.
    pub outputs: Option<Outputs>,
}

/// Everything routing is decided and trained from, for a batch: the primary's outputs alone
/// (no expert mixed in), its pooled read, its confidence in each expert's namespaces, and
/// every expert's outputs on every table ([`Model::expert_reads`]).
#[derive(Clone, Debug)]
pub struct ExpertReads {
    /// The primary's outputs.
    pub primary: Outputs,
    /// The primary's pooled read, `[tables, d_model]`.
    pub pooled: Tensor<2>,
    /// Per table and expert, the primary's least confident answer in its namespaces.
    pub confidence: Vec<Vec<f32>>,
    /// Per expert, its outputs on every table.
    pub experts: Vec<Outputs>,
}

/// The primary's outputs (no expert mixed in), its pooled read `[tables, d_model]`, and the
/// added namespaces' rows (`None` without any).
type PrimaryOutputs = (Outputs, Tensor<2>, Option<Vec<Vec<f32>>>);

impl Model {
    /// One forward pass at inference, everything read back at once: CTA logits for every
    /// column, CPA logits for (subject, every other column) inside the forward pass, and the
    /// gates. `subjects` gives each table's subject *column*.
    pub fn predict(
        &self,
        examples: &[&Example],
        subjects: &[usize],
        specialists: SpecialistUse,
    ) -> Result<Outputs, ModelError> {
        self.predict_for(examples, subjects, specialists, None)
    }

    /// [`Model::predict`] for a caller that reads only the `wanted` namespaces (all with
    /// `None`): the experts that know none of them stay closed, which changes no logit of
    /// those namespaces and saves their reads.
    ///
    /// The experts' router reads the primary's pooled read and its confidence in each
    /// expert's namespaces; each expert opens where its gate is above the router's threshold
    /// (on every table with [`SpecialistUse::All`], none with [`SpecialistUse::Off`]) and its
    /// logits are mixed into the primary's.
    pub fn predict_for(
        &self,
        examples: &[&Example],
        subjects: &[usize],
        specialists: SpecialistUse,
        wanted: Option<Wanted<'_>>,
    ) -> Result<Outputs, ModelError> {
        let (mut outputs, pooled, added) = self.primary_outputs(examples, subjects, specialists)?;
        if let Some(routing) = &self.expert_routing {
            if routing.experts() != self.experts.len() {
                return Err(ModelError::Swarm(SwarmError::Inconsistent(format!(
                    "the experts' router routes {} experts but the model holds {}: add experts \
                     with Model::push_expert",
                    routing.experts(),
                    self.experts.len()
                ))));
            }
            let confidence = self.expert_confidence(examples, &outputs);
            let features = ExpertRouting::features(pooled, &confidence);
            let decision = routing.router.decide(features);
            let probs = rows_of(decision.probs);
            let mut reads = Vec::with_capacity(self.experts.len());
            for (i, expert) in self.experts.iter().enumerate() {
                let asked = wanted.is_none_or(|w| knows_any(expert, w));
                let open: Vec<bool> = (0..examples.len())
                    .map(|b| {
                        asked
                            && match specialists {
                                SpecialistUse::Router => decision.active[b][i],
                                SpecialistUse::All => true,
                                SpecialistUse::Off => false,
                            }
                    })
                    .collect();
                for (b, table) in outputs.gates.iter_mut().enumerate() {
                    table.push((probs[b][i], open[b]));
                }
                reads.push(self.expert_read(expert, examples, subjects, &open)?);
            }
            self.mix_experts(&routing.mix.host_weights(), &reads, examples, &mut outputs);
        }
        // The added namespaces' outputs follow the shared head's (after the experts, who know
        // only the shared namespaces).
        for (row, added) in outputs.cta.iter_mut().zip(added.into_iter().flatten()) {
            row.extend(added);
        }
        Ok(outputs)
    }

    /// The primary's outputs, every expert's on every table, and the router's signals: what
    /// training the experts' routing reads (`colswarm train-router`). `None` without experts.
    pub fn expert_reads(
        &self,
        examples: &[&Example],
        subjects: &[usize],
    ) -> Result<Option<ExpertReads>, ModelError> {
        if self.experts.is_empty() {
            return Ok(None);
        }
        let (primary, pooled, _) =
            self.primary_outputs(examples, subjects, SpecialistUse::Router)?;
        let confidence = self.expert_confidence(examples, &primary);
        let every = vec![true; examples.len()];
        let experts = self
            .experts
            .iter()
            .map(|expert| {
                let read = self.expert_read(expert, examples, subjects, &every)?;
                Ok(read
                    .outputs
                    .unwrap_or_else(|| empty_outputs(examples.len())))
            })
            .collect::<Result<_, ModelError>>()?;
        Ok(Some(ExpertReads {
            primary,
            pooled,
            confidence,
            experts,
        }))
    }

    /// The primary's outputs for `examples` (no expert mixed in), its pooled read, and the
    /// added namespaces' rows.
    fn primary_outputs(
        &self,
        examples: &[&Example],
        subjects: &[usize],
        specialists: SpecialistUse,
    ) -> Result<PrimaryOutputs, ModelError> {
        let mut pairs = vec![Vec::new(); examples.len()];
        if self.space.len(Task::Cpa) > 0 {
            for (b, example) in examples.iter().enumerate() {
                if let Some(s) = example.columns.iter().position(|&c| c == subjects[b]) {
                    pairs[b] = (0..example.columns.len())
                        .filter(|&o| o != s)
                        .map(|o| (s, o))
                        .collect();
                }
            }
        }
        let out = self.forward_with_pairs(examples, pairs.clone(), specialists)?;
        let added = self.added_logits(&out, examples);
        let mut logits = out.cpa_logits.map(rows_of).unwrap_or_default().into_iter();
        let cpa = pairs
            .into_iter()
            .map(|table| {
                table
                    .into_iter()
                    .zip(logits.by_ref())
                    .map(|((s, o), l)| (s, o, l))
                    .collect()
            })
            .collect();
        let mut row_start = Vec::with_capacity(examples.len());
        let mut row = 0;
        for example in examples {
            row_start.push(row);
            row += example.columns.len();
        }
        let probs = rows_of(out.router.probs);
        let gates = (0..examples.len())
            .map(|b| {
                let active = out.router.active.get(b);
                probs
                    .get(b)
                    .map(|row| {
                        row.iter()
                            .enumerate()
                            .map(|(i, &g)| (g, active.is_some_and(|a| a[i])))
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect();
        let outputs = Outputs {
            cta: rows_of(out.cta_logits),
            cpa,
            row_start,
            gates,
        };
        Ok((outputs, out.pooled, added))
    }

    /// What `expert` predicts for the tables `open` marks.
    fn expert_read(
        &self,
        expert: &Expert,
        examples: &[&Example],
        subjects: &[usize],
        open: &[bool],
    ) -> Result<ExpertOutputs, ModelError> {
        let opened: Vec<usize> = (0..examples.len()).filter(|&b| open[b]).collect();
        let mut slot = vec![None; examples.len()];
        for (j, &b) in opened.iter().enumerate() {
            slot[b] = Some(j);
        }
        if opened.is_empty() {
            return Ok(ExpertOutputs {
                slot,
                outputs: None,
            });
        }
        let mut read: Vec<&Example> = opened.iter().map(|&b| examples[b]).collect();
        let read_subjects: Vec<usize> = opened.iter().map(|&b| subjects[b]).collect();
        let with_own_ngrams;
        if let Some(config) = expert.own_ngrams() {
            with_own_ngrams =
                with_expert_ngrams(&read, &self.expert_ngrams(), config, &expert.name)?;
            read = with_own_ngrams.iter().collect();
        }
        let outputs = expert
            .model
            .predict(&read, &read_subjects, SpecialistUse::Off)?;
        Ok(ExpertOutputs {
            slot,
            outputs: Some(outputs),
        })
    }

    /// Per table, per expert: the primary's least confident answer in the expert's
    /// namespaces.
    pub fn expert_confidence(&self, examples: &[&Example], outputs: &Outputs) -> Vec<Vec<f32>> {
        (0..examples.len())
            .map(|b| {
                self.experts
                    .iter()
                    .map(|expert| self.confidence(expert, outputs, b, examples[b]))
                    .collect()
            })
            .collect()
    }

    /// The primary's least confident answer on table `b` in `expert`'s namespaces: the lowest,
    /// over its columns (CTA) and pairs (CPA), of the best label's probability before the
    /// label-name prior (1 when it has none there).
    fn confidence(&self, expert: &Expert, outputs: &Outputs, b: usize, example: &Example) -> f32 {
        let best = |task: Task, logits: &[f32]| {
            let list = self.space.list(task);
            expert
                .namespaces(task)
                .iter()
                .map(|&n| best_probability(&list[n], logits))
                .fold(1.0f32, f32::min)
        };
        let start = outputs.row_start[b];
        let columns = outputs.cta[start..start + example.columns.len()]
            .iter()
            .map(|row| best(Task::Cta, row));
        let pairs = outputs.cpa[b]
            .iter()
            .map(|(_, _, row)| best(Task::Cpa, row));
        columns.chain(pairs).fold(1.0, f32::min)
    }

    /// Mixes each expert's logits into `outputs` (the primary's) on the tables it read, at
    /// `weights` (`[namespace][expert]`, [`colswarm_swarm::LogitMix::host_weights`]).
    pub fn mix_experts(
        &self,
        weights: &[Vec<f32>],
        reads: &[ExpertOutputs],
        examples: &[&Example],
        outputs: &mut Outputs,
    ) {
        let per_label = |task: Task| -> Vec<Vec<f32>> {
            let namespaces = label_namespaces(&self.space, task);
            (0..self.experts.len())
                .map(|i| namespaces.iter().map(|&n| weights[n][i]).collect())
                .collect()
        };
        let (cta_weights, cpa_weights) = (per_label(Task::Cta), per_label(Task::Cpa));
        for (b, example) in examples.iter().enumerate() {
            let opened: Vec<(usize, usize, &Outputs)> = reads
                .iter()
                .enumerate()
                .filter_map(|(i, read)| Some((i, read.slot[b]?, read.outputs.as_ref()?)))
                .collect();
            if opened.is_empty() {
                continue;
            }
            for c in 0..example.columns.len() {
                let others: Vec<MixInput<'_>> = opened
                    .iter()
                    .map(|&(i, j, out)| {
                        let own = out.cta[out.row_start[j] + c].as_slice();
                        let map = self.experts[i].label_map(Task::Cta);
                        (own, map, cta_weights[i].as_slice())
                    })
                    .collect();
                mix_row(&mut outputs.cta[outputs.row_start[b] + c], &others);
            }
            for (p, (_, _, row)) in outputs.cpa[b].iter_mut().enumerate() {
                // An expert without relations scores no pairs.
                let others: Vec<MixInput<'_>> = opened
                    .iter()
                    .filter_map(|&(i, j, out)| {
                        let (_, _, own) = out.cpa.get(j)?.get(p)?;
                        let map = self.experts[i].label_map(Task::Cpa);
                        Some((own.as_slice(), map, cpa_weights[i].as_slice()))
                    })
                    .collect();
                mix_row(row, &others);
            }
        }
    }
}

/// Whether `expert` knows a label of one of the `wanted` namespaces.
fn knows_any(expert: &Expert, wanted: Wanted<'_>) -> bool {
    let knows = |task, asked: &[usize]| expert.namespaces(task).iter().any(|n| asked.contains(n));
    knows(Task::Cta, wanted.cta) || knows(Task::Cpa, wanted.cpa)
}

/// Outputs for `tables` tables with no rows (an expert that read none of them).
fn empty_outputs(tables: usize) -> Outputs {
    Outputs {
        cta: Vec::new(),
        cpa: vec![Vec::new(); tables],
        row_start: vec![0; tables],
        gates: vec![Vec::new(); tables],
    }
}

/// Copies of `examples` whose n-grams are those of `config`, one of `variants`
/// ([`crate::Example::expert_ngrams`]), for the expert `name` that reads them.
fn with_expert_ngrams(
    examples: &[&Example],
    variants: &[NgramConfig],
    config: &NgramConfig,
    name: &str,
) -> Result<Vec<Example>, ModelError> {
    let variant = variants.iter().position(|v| v == config);
    examples
        .iter()
        .map(|example| {
            let ngrams = variant
                .and_then(|v| example.expert_ngrams.get(v))
                .ok_or_else(|| {
                    ModelError::Encoding(format!(
                        "table {:?} holds no n-grams for expert {name:?}, which reads them as \
                         {config:?}: encode tables with the model that holds the expert \
                         (Model::encode)",
                        example.table_id
                    ))
                })?;
            Ok(Example {
                ngrams: ngrams.clone(),
                expert_ngrams: Vec::new(),
                ..(*example).clone()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use burn::tensor::Device;
    use colswarm_tables::Table;

    use super::*;
    use crate::encode::Columns;

    #[test]
    fn experts_weighed_at_zero_leave_the_primary_s_answers_and_report_their_gates() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/colswarm-small");
        let mut model = Model::load(Path::new(dir), &Device::default()).unwrap();
        let table = Table::from_rows(
            "films",
            Some(vec!["title".into(), "director".into(), "year".into()]),
            vec![
                vec!["Rushmore".into(), "Wes Anderson".into(), "1998".into()],
                vec!["Heat".into(), "Michael Mann".into(), "1995".into()],
            ],
        );
        let examples = model.encode(&[table], Columns::All);
        let refs: Vec<&Example> = examples.iter().collect();
        let alone = model.predict(&refs, &[0], SpecialistUse::Off).unwrap();
        let routed = model.predict(&refs, &[0], SpecialistUse::Router).unwrap();
        let opened: Vec<bool> = routed.gates[0][3..].iter().map(|&(_, on)| on).collect();
        assert!(opened.iter().any(|&on| on), "{:?}", routed.gates);
        assert_ne!(routed.cta, alone.cta, "an open expert moves the logits");
        let routing = model.expert_routing.as_mut().unwrap();
        routing.mix.weight = routing.mix.weight.clone().map(|w| w.zeros_like());
        let weighed_out = model.predict(&refs, &[0], SpecialistUse::Router).unwrap();
        assert_eq!(weighed_out.cta, alone.cta);
        assert_eq!(weighed_out.cpa, alone.cpa);
        assert_eq!(weighed_out.gates, routed.gates);
    }
}
