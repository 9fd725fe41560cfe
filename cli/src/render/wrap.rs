//! Wrapping the text report to a terminal's width: a long line is broken at spaces, each
//! continuation indented two more than the line's own indent, so a verdict or a finding stays
//! readable in a narrow terminal. Only for a terminal: files and pipes keep one line per fact.
//! Never breaks inside a word; a word longer than the width stays whole on its line.

/// `text` with every line longer than `width` characters wrapped.
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for line in text.split_inclusive('\n') {
        let (body, newline) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if body.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let indent = body.len() - body.trim_start_matches(' ').len();
        let cont = " ".repeat((indent + 2).min(width / 2));
        let mut col = 0;
        let mut first = true;
        out.push_str(&body[..indent]);
        col += indent;
        for word in body[indent..].split(' ') {
            let w = word.chars().count();
            if !first && col + 1 + w > width {
                out.push('\n');
                out.push_str(&cont);
                col = cont.len();
            } else if !first {
                out.push(' ');
                col += 1;
            }
            out.push_str(word);
            col += w;
            first = false;
        }
        out.push_str(newline);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn long_lines_break_at_spaces_with_a_deeper_indent() {
        let text = "short\n  fix: free the blocks when done with them\n";
        assert_eq!(
            wrap(text, 20),
            "short\n  fix: free the\n    blocks when done\n    with them\n"
        );
        assert_eq!(
            wrap("a verylongwordthatstays x", 8),
            "a\n  verylongwordthatstays\n  x"
        );
        assert_eq!(wrap(text, 80), text);
    }
}
