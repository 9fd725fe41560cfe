//! Memory by role, with no annotation: what each tensor is for, inferred from the frames that
//! allocated it (parameters from `Module.to`/`cuda`/`nn.Parameter`, gradients from autograd's
//! backward, optimizer state from `Optimizer.step`, activations from the forward pass, data batches
//! from the DataLoader and the copies of the program's own lines, library workspaces), and the
//! cache's free space beside them.
//!
//! A role is a reading of the stack, never a measurement: it says "other" rather than guess.
use crate::analysis::torch_steps::{Roles, OTHER, ROLES};

use super::model::{FrameOut, RolesOut};

/// The role of a block allocated with these frames (innermost first), as an index of [`ROLES`].
pub fn role(frames: &[FrameOut]) -> u8 {
    let python = || frames.iter().filter(|f| f.kind == "python");
    let native = || {
        frames
            .iter()
            .filter(|f| f.kind == "native")
            .filter_map(|f| f.function.as_deref())
    };
    let in_file =
        |part: &str| python().any(|f| f.file.as_deref().is_some_and(|p| p.contains(part)));
    let index = |name: &str| ROLES.iter().position(|r| *r == name).unwrap_or(0) as u8;
    if native().any(|n| n.contains("orkspace")) {
        return index("workspaces");
    }
    if in_file("/torch/optim/") {
        return index("optimizer_state");
    }
    let backward = python().any(|f| {
        let name = function(f);
        (name == "backward" || name.ends_with(".backward") || name == "grad")
            && f.file.as_deref().is_some_and(|p| p.contains("/torch/"))
    });
    if backward
        || native().any(|n| n.contains("torch::autograd::Engine") || n.contains("AccumulateGrad"))
    {
        return index("gradients");
    }
    let parameters = python().any(|f| {
        let (name, file) = (function(f), f.file.as_deref().unwrap_or(""));
        file.contains("/torch/nn/parameter.py")
            || (file.contains("/torch/nn/modules/module.py")
                && ["_apply", ".to", ".cuda", "to_empty"]
                    .iter()
                    .any(|n| name.contains(n)))
            || (file.contains("/torch/nn/modules/")
                && (name.ends_with(".__init__") || name.ends_with("reset_parameters")))
    });
    if parameters {
        return index("parameters");
    }
    if in_file("/torch/utils/data/") {
        return index("data");
    }
    if in_file("/torch/nn/") || python().any(|f| function(f).ends_with("forward")) {
        return index("activations");
    }
    // A copy made by the program's own line (`x.to("cuda")`, `x.cuda()`): a batch coming in.
    if native().any(|n| n.contains("_to_copy") || n.contains("at::native::to(")) {
        return index("data");
    }
    OTHER
}

fn function(f: &FrameOut) -> &str {
    f.function.as_deref().unwrap_or("")
}

/// `roles` and the cache's free space as the model shows them.
pub fn out(roles: &Roles, allocated: u64, reserved: u64) -> RolesOut {
    RolesOut {
        parameters: roles[0],
        gradients: roles[1],
        optimizer_state: roles[2],
        activations: roles[3],
        data: roles[4],
        workspaces: roles[5],
        other: roles[6],
        cache_free: reserved.saturating_sub(allocated),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(function: &str, file: &str) -> FrameOut {
        FrameOut {
            kind: "python",
            function: Some(function.into()),
            file: Some(file.into()),
            line: Some(1),
            module: None,
            address: "0x0".into(),
            main_thread: false,
            offset: None,
            hidden: None,
            short_file: None,
        }
    }

    fn native(function: &str) -> FrameOut {
        FrameOut {
            kind: "native",
            function: Some(function.into()),
            ..py("", "")
        }
    }

    #[test]
    fn roles_from_the_allocating_frames() {
        let site = "/venv/lib/python3.12/site-packages/torch";
        let name = |frames: &[FrameOut]| ROLES[role(frames) as usize];
        let to = py("Module._apply", &format!("{site}/nn/modules/module.py"));
        assert_eq!(name(&[to, py("<module>", "train.py")]), "parameters");
        let step = py("AdamW.step", &format!("{site}/optim/adamw.py"));
        assert_eq!(
            name(&[step.clone(), py("<module>", "train.py")]),
            "optimizer_state"
        );
        let backward = py("backward", &format!("{site}/autograd/__init__.py"));
        assert_eq!(name(&[native("x"), backward]), "gradients");
        let forward = py("Linear.forward", &format!("{site}/nn/modules/linear.py"));
        assert_eq!(name(std::slice::from_ref(&forward)), "activations");
        assert_eq!(
            name(&[native("at::cuda::getCUDABlasLtWorkspace()"), forward]),
            "workspaces"
        );
        let copy = native("at::native::_to_copy(at::Tensor const&)");
        assert_eq!(name(&[copy, py("<module>", "train.py")]), "data");
        assert_eq!(
            name(&[native("at::native::clone"), py("<module>", "train.py")]),
            "other"
        );
        assert_eq!(
            out(&[1, 2, 3, 4, 5, 6, 7], 28, 30),
            RolesOut {
                parameters: 1,
                gradients: 2,
                optimizer_state: 3,
                activations: 4,
                data: 5,
                workspaces: 6,
                other: 7,
                cache_free: 2
            }
        );
    }
}
