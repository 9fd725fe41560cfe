//! Memory by role (parameters, gradients, optimizer state, ...) in one line, shared by the text and
//! Markdown reports (see `report::torch_roles`).
use crate::report::model::RolesOut;
use crate::units::human_bytes;

/// One line of roles, largest first, those holding nothing left out.
pub fn roles_line(r: &RolesOut) -> String {
    let mut parts = [
        ("parameters", r.parameters),
        ("gradients", r.gradients),
        ("optimizer state", r.optimizer_state),
        ("activations", r.activations),
        ("data", r.data),
        ("workspaces", r.workspaces),
        ("other", r.other),
    ];
    parts.sort_by_key(|p| std::cmp::Reverse(p.1));
    let mut line: Vec<String> = parts
        .iter()
        .filter(|p| p.1 > 0)
        .map(|(n, b)| format!("{n} {}", human_bytes(*b)))
        .collect();
    line.push(format!("cache free {}", human_bytes(r.cache_free)));
    line.join(", ")
}
