//! Colour for the text report on a terminal: process headings bold, findings yellow, failures and
//! truncated traces red, section titles cyan. Applied to the rendered lines, so the text renderer and
//! its snapshot stay plain; off when the output is not a terminal, when `NO_COLOR` is set, or with
//! `--color never`.

const BOLD: &str = "\x1b[1m";
const RED: &str = "\x1b[1;31m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// Whether to colour: `always`, `never`, or `auto` (a terminal and no `NO_COLOR`).
pub fn wanted(choice: &str, is_terminal: bool, no_color_set: bool) -> bool {
    match choice {
        "always" => true,
        "never" => false,
        _ => is_terminal && !no_color_set,
    }
}

/// `text` with ANSI colours added line by line.
pub fn paint(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let trimmed = body.trim_start();
        let colour = if body.starts_with("== ") {
            Some(BOLD)
        } else if trimmed.starts_with("finding:") {
            Some(YELLOW)
        } else if trimmed.starts_with("FAILED") || body.contains("TRUNCATED") {
            Some(RED)
        } else if !body.starts_with(' ') && !body.is_empty() && body.contains(": ") {
            Some(CYAN)
        } else {
            None
        };
        match colour {
            Some(c) => {
                out.push_str(c);
                out.push_str(body);
                out.push_str(RESET);
            }
            None => out.push_str(body),
        }
        out.push_str(nl);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_findings_and_failures_get_colours_and_nothing_else_changes() {
        let text = "== ./train  (pid 1)\nheap: 3 allocations\n  #1  4.0 KiB\n  finding: grows\n  FAILED cuMemAlloc\n";
        let painted = paint(text);
        assert_eq!(
            painted,
            "\x1b[1m== ./train  (pid 1)\x1b[0m\n\x1b[36mheap: 3 allocations\x1b[0m\n  #1  4.0 KiB\n\x1b[33m  finding: grows\x1b[0m\n\x1b[1;31m  FAILED cuMemAlloc\x1b[0m\n"
        );
        let stripped = painted
            .replace(BOLD, "")
            .replace(RED, "")
            .replace(YELLOW, "")
            .replace(CYAN, "")
            .replace(RESET, "");
        assert_eq!(stripped, text);
    }

    #[test]
    fn auto_means_a_terminal_without_no_color() {
        assert!(wanted("auto", true, false));
        assert!(!wanted("auto", true, true));
        assert!(!wanted("auto", false, false));
        assert!(wanted("always", false, true));
        assert!(!wanted("never", true, false));
    }
}
