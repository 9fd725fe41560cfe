//! `--redact`: removes what identifies a person or a machine before a report leaves the machine:
//! home directories (to `~`), the user's name, the host name, and the command's arguments (the
//! program's name stays). Applied to the model, so every format is redacted alike.
use super::model::{FrameOut, Report};

/// What to hide.
pub struct Redactions {
    home: Option<String>,
    user: Option<String>,
    hosts: Vec<String>,
}

impl Redactions {
    /// From this process's environment and the report's host names.
    pub fn from_env(report: &Report) -> Redactions {
        Self::for_hosts(
            report
                .processes
                .iter()
                .map(|p| p.hostname.clone())
                .collect(),
        )
    }

    /// From this process's environment and the traces' host names.
    pub fn for_hosts(mut hosts: Vec<String>) -> Redactions {
        hosts.sort();
        hosts.dedup();
        hosts.retain(|h| !h.is_empty());
        Redactions {
            home: std::env::var("HOME").ok().filter(|h| h.len() > 1),
            user: std::env::var("USER").ok().filter(|u| u.len() > 1),
            hosts,
        }
    }

    /// Every string in `v` redacted (object keys stay).
    pub fn json(&self, v: &mut serde_json::Value) {
        use serde_json::Value;
        match v {
            Value::String(s) => *s = self.text(s),
            Value::Array(items) => items.iter_mut().for_each(|i| self.json(i)),
            Value::Object(map) => map.values_mut().for_each(|i| self.json(i)),
            _ => {}
        }
    }

    /// `s` with home directories, the user's name and the host names hidden.
    pub fn text(&self, s: &str) -> String {
        let mut out = s.to_string();
        if let Some(home) = &self.home {
            out = out.replace(home.as_str(), "~");
        }
        // Other users' homes too.
        out = redact_homes(&out);
        if let Some(user) = &self.user {
            out = out.replace(user.as_str(), "<user>");
        }
        for h in &self.hosts {
            out = out.replace(h.as_str(), "<host>");
        }
        out
    }
}

fn redact_homes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("/home/") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 6..];
        let end = after
            .find(|c: char| c == '/' || c.is_whitespace())
            .unwrap_or(after.len());
        out.push('~');
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Redacts `report` in place.
pub fn redact(report: &mut Report, r: &Redactions) {
    if let Some(ranks) = &mut report.ranks {
        for row in &mut ranks.rows {
            row.host = "<host>".into();
        }
    }
    for u in &mut report.unreadable {
        u.trace = r.text(&u.trace);
        u.why = r.text(&u.why);
    }
    for p in &mut report.processes {
        p.hostname = "<host>".into();
        p.exe = r.text(&p.exe);
        p.trace = r.text(&p.trace);
        if let Some(first) = p.argv.first().cloned() {
            let program = r.text(&first);
            let n = p.argv.len();
            p.argv = vec![program];
            if n > 1 {
                let s = if n == 2 { "" } else { "s" };
                p.argv.push(format!("<{} argument{s} redacted>", n - 1));
            }
        }
        // The command names the program only: its arguments are what is hidden.
        p.command = super::command::name(&p.exe, &p.argv[..p.argv.len().min(1)]);
        p.notes = p.notes.iter().map(|n| r.text(n)).collect();
        for f in super::severity::findings_mut(p) {
            f.text = r.text(&f.text);
            f.site = f.site.as_deref().map(|s| r.text(s));
        }
        for g in &mut p.device.gpus {
            g.uuid = "<gpu uuid>".into();
        }
        let frames = p
            .leaks
            .host
            .sites
            .iter_mut()
            .chain(p.leaks.mmap.sites.iter_mut())
            .chain(p.leaks.device.sites.iter_mut())
            .chain(p.leaks.managed.sites.iter_mut())
            .chain(p.leaks.pinned.sites.iter_mut())
            .chain(p.leaks.registered.sites.iter_mut())
            .chain(p.heap.peak_sites.iter_mut())
            .flat_map(|s| s.frames.iter_mut())
            .chain(p.growth.host.iter_mut().flat_map(|g| g.frames.iter_mut()))
            .chain(p.growth.device.iter_mut().flat_map(|g| g.frames.iter_mut()))
            .chain(
                p.growth
                    .mappings
                    .iter_mut()
                    .flat_map(|g| g.frames.iter_mut()),
            )
            .chain(
                p.growth
                    .released
                    .iter_mut()
                    .flat_map(|g| g.frames.iter_mut()),
            )
            .chain(
                p.transfers
                    .sites
                    .iter_mut()
                    .flat_map(|s| s.frames.iter_mut()),
            )
            .chain(
                p.device
                    .failures
                    .iter_mut()
                    .flat_map(|f| f.frames.iter_mut()),
            )
            .chain(p.numa.calls.iter_mut().flat_map(|c| c.frames.iter_mut()))
            .chain(
                p.numa
                    .placements
                    .iter_mut()
                    .flat_map(|c| c.frames.iter_mut()),
            );
        for f in frames {
            redact_frame(f, r);
        }
    }
    // The figures, the verdict and the notes are drawn again from what is left.
    super::figures::fill(report);
    super::verdict::fill(report);
    report.notes = report.notes.iter().map(|n| r.text(n)).collect();
}

fn redact_frame(f: &mut FrameOut, r: &Redactions) {
    f.file = f.file.as_deref().map(|s| r.text(s).into());
    f.module = f.module.as_deref().map(|s| r.text(s).into());
}

#[cfg(test)]
mod tests {
    #[test]
    fn homes_become_tilde() {
        assert_eq!(super::redact_homes("/home/alice/src/x.c"), "~/src/x.c");
        assert_eq!(super::redact_homes("a /home/bob b /home/c/d"), "a ~ b ~/d");
        assert_eq!(super::redact_homes("/usr/lib/x.so"), "/usr/lib/x.so");
    }
}
