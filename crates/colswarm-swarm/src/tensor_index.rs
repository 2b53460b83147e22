//! Removing one index of a tensor's axis: how a specialist's slice leaves the router's and the
//! fusion's parameters when it leaves the swarm.

use burn::module::Param;
use burn::tensor::Tensor;

/// `tensor` without index `i` of axis `axis` (the others, in order): how a specialist leaves
/// a parameter that holds a slice per specialist.
///
/// # Shapes
///
/// - `tensor`: any `[…, n, …]` with `n` at `axis`, `i < n`
/// - output: the same with `n − 1` at `axis`
pub fn without_index<const D: usize>(tensor: Tensor<D>, axis: usize, i: usize) -> Tensor<D> {
    let n = tensor.dims()[axis];
    let mut parts = Vec::with_capacity(2);
    if i > 0 {
        parts.push(tensor.clone().narrow(axis, 0, i));
    }
    if i + 1 < n {
        parts.push(tensor.clone().narrow(axis, i + 1, n - i - 1));
    }
    if parts.is_empty() {
        let mut dims = tensor.dims();
        dims[axis] = 0;
        return Tensor::zeros(dims, &tensor.device());
    }
    Tensor::cat(parts, axis)
}

/// A parameter without index `i` of axis `axis` (a new parameter, as [`without_index`]).
pub(crate) fn param_without_index<const D: usize>(
    param: &Param<Tensor<D>>,
    axis: usize,
    i: usize,
) -> Param<Tensor<D>> {
    Param::from_tensor(without_index(param.val(), axis, i))
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, TensorData};

    use super::*;

    #[test]
    fn removes_one_index_of_any_axis() {
        let device = Device::flex();
        let values: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let t = Tensor::<2>::from_data(TensorData::new(values, [3, 4]), &device);
        let rows = |t: Tensor<2>| t.into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(
            rows(without_index(t.clone(), 0, 1)),
            [0., 1., 2., 3., 8., 9., 10., 11.]
        );
        assert_eq!(
            rows(without_index(t.clone(), 1, 0)),
            [1., 2., 3., 5., 6., 7., 9., 10., 11.]
        );
        assert_eq!(
            rows(without_index(t.clone(), 1, 3)),
            [0., 1., 2., 4., 5., 6., 8., 9., 10.]
        );
        let single = without_index(t.narrow(0, 0, 1), 0, 0);
        assert_eq!(single.dims(), [0, 4]);
    }
}
