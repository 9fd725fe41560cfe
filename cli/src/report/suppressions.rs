//! `--suppressions FILE`: leaks the user has decided are not theirs to fix, in LeakSanitizer's
//! format (one `leak:PATTERN` a line, `#` comments, `*` matching any run of characters, `^` and `$`
//! anchoring; otherwise PATTERN may occur anywhere in the name). A site is suppressed when a
//! pattern matches the function, the source file or the module of any of its frames. Suppressed
//! sites stay in the report, marked with the rule, and their bytes are set apart from the
//! program's leaks (and so from `--fail-on leaked-heap`); no figure of the trace changes.
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::model::{FrameOut, LeakClass, Report};

/// One rule of a suppressions file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The pattern after `leak:`.
    pub pattern: String,
    /// Where it was written, `FILE:LINE`, for the report.
    pub at: String,
}

/// The rules of one file.
#[derive(Debug, Default, Clone)]
pub struct Suppressions {
    pub rules: Vec<Rule>,
}

impl Suppressions {
    /// Reads and checks a suppressions file; an error names the file, the line and what to write.
    pub fn load(path: &Path) -> Result<Suppressions> {
        let text = std::fs::read_to_string(path).with_context(|| {
            format!(
                "cannot read the suppressions file {} (give a text file of `leak:PATTERN` lines)",
                path.display()
            )
        })?;
        Suppressions::parse(&text, &path.display().to_string())
    }

    /// The rules of `text`, read from `name`.
    pub fn parse(text: &str, name: &str) -> Result<Suppressions> {
        let mut rules = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = format!("{name}:{}", i + 1);
            let Some((kind, pattern)) = line.split_once(':') else {
                bail!(
                    "{at}: `{line}` is not a suppression: write `leak:PATTERN` (PATTERN a function, \
                     file or module name, * for any characters), or start the line with # for a comment"
                );
            };
            if kind.trim() != "leak" {
                bail!(
                    "{at}: `{}:` suppressions are not supported (LeakSanitizer's other kinds do not \
                     apply to memshim): only `leak:PATTERN` lines are",
                    kind.trim()
                );
            }
            let pattern = pattern.trim();
            if pattern.trim_matches(['*', '^', '$']).is_empty() {
                bail!(
                    "{at}: `{line}` has no pattern, or one that matches every leak: name a \
                     function, file or module after `leak:`"
                );
            }
            rules.push(Rule {
                pattern: pattern.to_string(),
                at,
            });
        }
        Ok(Suppressions { rules })
    }

    /// The first rule matching a frame of `frames`.
    pub fn matching(&self, frames: &[FrameOut]) -> Option<&Rule> {
        self.rules.iter().find(|r| {
            frames.iter().any(|f| {
                [&f.function, &f.file, &f.module]
                    .into_iter()
                    .flatten()
                    .any(|name| matches(&r.pattern, name))
            })
        })
    }
}

/// Marks every leak site of every process that a rule matches and sets its bytes apart.
pub fn apply(report: &mut Report, s: &Suppressions) {
    if s.rules.is_empty() {
        return;
    }
    for p in &mut report.processes {
        let l = &mut p.leaks;
        for c in [
            &mut l.host,
            &mut l.mmap,
            &mut l.device,
            &mut l.managed,
            &mut l.pinned,
            &mut l.registered,
            &mut p.torch.held_at_end,
        ] {
            apply_class(c, s);
        }
    }
    super::figures::fill(report);
}

fn apply_class(c: &mut LeakClass, s: &Suppressions) {
    for site in c.sites.iter_mut().filter(|site| site.is_programs()) {
        if let Some(rule) = s.matching(&site.frames) {
            site.suppressed_by = Some(format!("leak:{} ({})", rule.pattern, rule.at));
            c.suppressed_bytes += site.bytes;
            c.suppressed_count += site.count;
        }
    }
}

/// LeakSanitizer's matching: `*` any run of characters, `^` at the start and `$` at the end anchor
/// the pattern; otherwise it may occur anywhere in `name`.
fn matches(pattern: &str, name: &str) -> bool {
    let (anchored_start, p) = match pattern.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, pattern),
    };
    let (anchored_end, p) = match p.strip_suffix('$') {
        Some(rest) => (true, rest),
        None => (false, p),
    };
    let parts: Vec<&str> = p.split('*').collect();
    let mut at = 0;
    for (i, part) in parts.iter().enumerate() {
        if part.is_empty() {
            continue;
        }
        let last = i == parts.len() - 1;
        if i == 0 && anchored_start {
            if !name.starts_with(part) {
                return false;
            }
            at = part.len();
        } else if last && anchored_end {
            return name.len() >= at + part.len() && name.ends_with(part);
        } else {
            match name[at..].find(part) {
                Some(found) => at += found + part.len(),
                None => return false,
            }
        }
    }
    // An anchored end after a trailing `*` (or an empty pattern) holds anywhere.
    !anchored_end || parts.last().is_some_and(|l| l.is_empty()) || at == name.len()
}

#[cfg(test)]
#[path = "suppressions_tests.rs"]
mod tests;
