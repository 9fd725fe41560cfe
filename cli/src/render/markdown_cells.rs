//! Markdown table cells: escaping, and a site as one cell. Shared by the Markdown report and its
//! PyTorch section.
use super::site_view;
use crate::report::model::frame::is_allocator;
use crate::report::model::FrameOut;

/// Frames shown per site.
const FRAMES: usize = 4;

/// A site as one table cell: the innermost frames, innermost first, separated by arrows, ending at
/// `main` (what runs before it is the C library's start-up), without the frames the reports hide
/// (see `report::frame_marks`).
pub fn site_cell(frames: &[FrameOut]) -> String {
    use crate::report::model::frame::{file_name, place, shown};
    let frames: Vec<FrameOut> = shown(frames).into_iter().cloned().collect();
    let (first, native) = site_view(&frames);
    let end = first
        .iter()
        .position(|f| f.function.as_deref() == Some("main"))
        .map_or(first.len(), |i| i + 1);
    let frames = &first[..end];
    let parts: Vec<String> = frames
        .iter()
        .take(FRAMES)
        .map(|f| {
            let func = escape(f.function.as_deref().unwrap_or("??"));
            match (file_name(f), f.line) {
                (Some(file), Some(line)) => {
                    format!("`{func}` ({}:{line})", escape_text(file).replace('`', "'"))
                }
                _ if f.function.is_none() => format!("`{}`", escape(&place(f))),
                _ => format!("`{func}`"),
            }
        })
        .collect();
    let more = if frames.len() > FRAMES {
        " ← …"
    } else {
        ""
    };
    let calls = match native
        .iter()
        .find(|f| f.function.is_some() && !is_allocator(f))
    {
        Some(f) => format!(
            " (native: `{}`)",
            escape(f.function.as_deref().unwrap_or("??"))
        ),
        None => String::new(),
    };
    let lent = if frames.first().is_some_and(|f| f.main_thread) {
        "main thread: "
    } else {
        ""
    };
    format!("{lent}{}{more}{calls}", parts.join(" ← "))
}

/// Keeps a table cell a single cell (for text inside a code span too, where `<` is itself).
pub fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace('`', "'")
}

/// Text outside code spans: `&`, `<` and `>` as entities, so `<frozen importlib._bootstrap>` is
/// shown, not read as an HTML tag; `|` escaped, so a table cell stays one cell.
pub fn escape_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('|', "\\|")
}
