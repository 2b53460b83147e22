//! Deterministic parameter ids, so an optimizer's saved state finds its parameters again.
//!
//! burn keys optimizer state by [`ParamId`], which it draws at random when a module is built or
//! loaded; a resumed run would silently restart Adam's moments. Numbering parameters in module
//! order (the order is fixed by the module's structure) makes the ids the same in every process.

use burn::module::{Module, ModuleMapper, Param, ParamId};
use burn::tensor::Tensor;

/// First id handed out (clear of small numbers other code might use).
const FIRST_ID: u64 = 1 << 32;

struct Renumber {
    next: u64,
}

impl ModuleMapper for Renumber {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (_, tensor, mapper) = param.consume();
        let id = ParamId::from(self.next);
        self.next += 1;
        Param::from_mapped_value(id, tensor, mapper)
    }
}

/// Gives every float parameter of `module` the id of its position in module order.
pub fn renumber<M: Module>(module: M) -> M {
    module.map(&mut Renumber { next: FIRST_ID })
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::ModuleVisitor;
    use burn::tensor::Device;
    use colswarm_rwkv::RwkvConfig;

    struct Ids(Vec<u64>);
    impl ModuleVisitor for Ids {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.0.push(param.id.val());
        }
    }

    fn ids<M: Module>(module: &M) -> Vec<u64> {
        let mut visitor = Ids(Vec::new());
        module.visit(&mut visitor);
        visitor.0
    }

    #[test]
    fn two_builds_get_the_same_ids_and_keep_their_values() {
        let device = Device::flex();
        let config = RwkvConfig::new(300, 64, 1);
        let a = config.init(1, &device);
        let b = config.init(1, &device);
        assert_ne!(ids(&a), ids(&b), "burn draws fresh ids");
        let before = a.emb.weight.val().into_data();
        let (a, b) = (renumber(a), renumber(b));
        assert_eq!(ids(&a), ids(&b));
        assert_eq!(ids(&a)[0], FIRST_ID);
        assert_eq!(a.emb.weight.val().into_data(), before);
    }
}
