//! Sequence mode, step mode and padding agree.

use burn::tensor::{Device, Int, Tensor, TensorData};
use colswarm_rwkv::{Rwkv, RwkvConfig, RwkvState};
use colswarm_testing::perturb;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn tiny_model(seed: u64) -> (Rwkv, RwkvConfig) {
    let config = RwkvConfig::new(64, 32, 2)
        .with_head_size(8)
        .with_d_ffn(Some(64))
        .with_decay_rank(Some(4))
        .with_icl_rank(Some(4))
        .with_value_rank(Some(4))
        .with_gate_rank(Some(8));
    let model = perturb(config.init(seed, &Device::flex()), seed + 1, 0.3);
    (model, config)
}

fn random_tokens(rng: &mut ChaCha8Rng, len: usize) -> Vec<i64> {
    (0..len).map(|_| rng.random_range(0..64)).collect()
}

fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

fn assert_close(a: &[f32], b: &[f32], tol: f32, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths differ");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{what}: element {i} differs: {x} vs {y}"
        );
    }
}

fn assert_states_close(a: &RwkvState, b: &RwkvState, tol: f32, what: &str) {
    for (layer, (x, y)) in a.layers.iter().zip(&b.layers).enumerate() {
        assert_close(
            &values(x.wkv.clone()),
            &values(y.wkv.clone()),
            tol,
            &format!("{what} layer {layer} wkv"),
        );
        assert_close(
            &values(x.att_shift.clone()),
            &values(y.att_shift.clone()),
            tol,
            &format!("{what} layer {layer} att_shift"),
        );
        assert_close(
            &values(x.ffn_shift.clone()),
            &values(y.ffn_shift.clone()),
            tol,
            &format!("{what} layer {layer} ffn_shift"),
        );
    }
}

#[test]
fn step_mode_matches_sequence_mode() {
    let device = Device::flex();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for (case, time) in [1usize, 2, 5, 17].into_iter().enumerate() {
        let (model, _) = tiny_model(100 + case as u64);
        let batch = 2;
        let tokens: Vec<i64> = random_tokens(&mut rng, batch * time);
        let seq_tokens =
            Tensor::<2, Int>::from_data(TensorData::new(tokens.clone(), [batch, time]), &device);
        let seq = model.forward(seq_tokens, None, None);
        let seq_hidden = values(seq.hidden);

        let mut state = model.zero_state(batch, &device);
        let d = model.d_model();
        for t in 0..time {
            let column: Vec<i64> = (0..batch).map(|b| tokens[b * time + t]).collect();
            let (hidden, next) = model.step(Tensor::from_data(column.as_slice(), &device), state);
            state = next;
            let step_hidden = values(hidden);
            for b in 0..batch {
                let at = (b * time + t) * d;
                assert_close(
                    &step_hidden[b * d..(b + 1) * d],
                    &seq_hidden[at..at + d],
                    1e-5,
                    &format!("T={time} hidden b={b} t={t}"),
                );
            }
        }
        assert_states_close(&state, &seq.state, 1e-5, &format!("T={time}"));
    }
}

#[test]
fn continuing_from_a_state_equals_reading_at_once() {
    let device = Device::flex();
    let (model, _) = tiny_model(7);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let tokens = random_tokens(&mut rng, 12);
    let all = Tensor::<2, Int>::from_data(TensorData::new(tokens.clone(), [1, 12]), &device);
    let first = Tensor::<2, Int>::from_data(TensorData::new(tokens[..5].to_vec(), [1, 5]), &device);
    let rest = Tensor::<2, Int>::from_data(TensorData::new(tokens[5..].to_vec(), [1, 7]), &device);
    let whole = model.forward(all, None, None);
    let head = model.forward(first, None, None);
    let tail = model.forward(rest, None, Some(head.state));
    assert_states_close(&tail.state, &whole.state, 1e-5, "split reading");
    let whole_hidden = values(whole.hidden);
    assert_close(
        &values(tail.hidden),
        &whole_hidden[5 * 32..],
        1e-5,
        "split hidden",
    );
}

#[test]
fn padding_does_not_leak_into_outputs_or_state() {
    let device = Device::flex();
    let (model, _) = tiny_model(21);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let lengths = [9usize, 4, 1, 0];
    let time = 9;
    let d = model.d_model();
    // Padding positions hold random tokens: they must not matter.
    let tokens = random_tokens(&mut rng, lengths.len() * time);
    let batch = Tensor::<2, Int>::from_data(
        TensorData::new(tokens.clone(), [lengths.len(), time]),
        &device,
    );
    let padded = model.forward(batch, Some(&lengths), None);
    let padded_hidden = values(padded.hidden);

    for (b, &len) in lengths.iter().enumerate() {
        let row = Tensor::<1, Int>::from_data([b as i64], &device);
        let padded_state = padded.state.select(row);
        let alone_state = if len == 0 {
            model.zero_state(1, &device)
        } else {
            let own = tokens[b * time..b * time + len].to_vec();
            let alone = model.forward(
                Tensor::<2, Int>::from_data(TensorData::new(own, [1, len]), &device),
                None,
                None,
            );
            let alone_hidden = values(alone.hidden);
            assert_close(
                &padded_hidden[b * time * d..(b * time + len) * d],
                &alone_hidden,
                1e-5,
                &format!("hidden of sequence {b}"),
            );
            alone.state
        };
        assert_states_close(
            &padded_state,
            &alone_state,
            1e-5,
            &format!("state of sequence {b} (length {len})"),
        );
    }
}

#[test]
fn reading_the_states_alone_gives_the_full_reads_states() {
    let device = Device::flex();
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    for layers in [1, 3] {
        let config = RwkvConfig::new(64, 32, layers)
            .with_head_size(8)
            .with_d_ffn(Some(64));
        let model = perturb(config.init(5, &device), 6, 0.3);
        let (lengths, time) = ([7usize, 3, 0], 7);
        let tokens = random_tokens(&mut rng, lengths.len() * time);
        let batch = || {
            Tensor::<2, Int>::from_data(
                TensorData::new(tokens.clone(), [lengths.len(), time]),
                &device,
            )
        };
        let full = model.forward(batch(), Some(&lengths), None).state;
        let alone = model.read_wkv_states(batch(), Some(&lengths));
        assert_eq!(alone.len(), layers);
        for (layer, (a, f)) in alone.into_iter().zip(full.layers).enumerate() {
            // The same operations in the same order: bit for bit.
            assert_eq!(values(a), values(f.wkv), "{layers} layers: layer {layer}");
        }
    }
}

#[test]
fn a_full_sequence_reads_the_same_bits_beside_a_padded_one_as_in_a_batch_without_padding() {
    // A batch whose sequences all fill it skips the padding mask; beside a shorter sequence the
    // mask multiplies the full one's rows by ones. Both must give the same bits.
    let (model, _) = tiny_model(31);
    let mut rng = ChaCha8Rng::seed_from_u64(32);
    let time = 11;
    let full = random_tokens(&mut rng, time);
    let mut short = random_tokens(&mut rng, 6);
    short.resize(time, 0);
    let device = Device::flex();
    let batch = |rows: &[&[i64]]| {
        let flat: Vec<i64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
        Tensor::<2, Int>::from_data(TensorData::new(flat, [rows.len(), time]), &device)
    };
    let padded = model.forward(batch(&[&full, &short]), Some(&[time, 6]), None);
    let alone = model.forward(batch(&[&full]), Some(&[time]), None);
    let unpadded = model.forward(batch(&[&full]), None, None);
    let first = |t: Tensor<3>| values(t.narrow(0, 0, 1));
    let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
    assert_eq!(
        bits(first(padded.hidden)),
        bits(first(alone.hidden.clone()))
    );
    assert_eq!(bits(values(alone.hidden)), bits(values(unpadded.hidden)));
    for (p, a) in padded.state.layers.iter().zip(&alone.state.layers) {
        let first4 = |t: Tensor<4>| bits(values(t.narrow(0, 0, 1)));
        let first2 = |t: Tensor<2>| bits(values(t.narrow(0, 0, 1)));
        assert_eq!(first4(p.wkv.clone()), first4(a.wkv.clone()));
        assert_eq!(first2(p.att_shift.clone()), first2(a.att_shift.clone()));
        assert_eq!(first2(p.ffn_shift.clone()), first2(a.ffn_shift.clone()));
    }
}
