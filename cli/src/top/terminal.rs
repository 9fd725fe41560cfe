//! The terminal of `memshim top`: raw mode and the alternate screen while it runs (given back
//! however it ends, a panic included: ratatui's `init` hooks the panic handler), the keys, and the
//! refresh. A reading thread reads the trace on about once an interval and hands each result over;
//! the screen is redrawn a few times a second, so keys answer at once whatever a reading costs.
//!
//! Never: write to the trace, signal or wait on the traced process, or block the screen on a
//! replay. Quitting leaves the program as it was.
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::DefaultTerminal;

use super::live::{self, Live};
use crate::replay::follow::Following;

/// How often keys are looked for and the screen redrawn.
const TICK: Duration = Duration::from_millis(200);

/// One replay's result: the figures, or why the trace could not be read then.
type Reading = (Result<Live, String>, Instant);

/// Which trace the target names now (a directory or a pid may come to name a newer one).
pub type Retarget = Box<dyn Fn() -> Option<PathBuf> + Send>;

/// Shows the trace at `path`, read on every `interval`, until a quit key. With `retarget`, the
/// trace the target names is looked for again at each reading, and a newer one followed instead.
pub fn run(path: PathBuf, retarget: Option<Retarget>, interval: Duration) -> Result<()> {
    if !std::io::stdout().is_terminal() {
        bail!(
            "memshim top draws on a terminal and its output is not one; for what {} holds so far, run `memshim report {}`",
            path.display(),
            path.display()
        );
    }
    let (tx, rx) = mpsc::channel::<Reading>();
    let ceilings = crate::bench::ceilings::stored();
    let mut trace = path.clone();
    std::thread::Builder::new()
        .name("memshim-top-reader".into())
        .spawn(move || {
            let mut following: Option<Following> = None;
            loop {
                let started = Instant::now();
                // A process that ended keeps its last trace.
                if let Some(newer) = retarget
                    .as_ref()
                    .and_then(|named| named())
                    .filter(|p| *p != trace)
                {
                    trace = newer;
                    following = None;
                }
                let read = match following.as_mut() {
                    Some(f) => Ok(f),
                    None => Following::open(&trace).map(|f| following.insert(f)),
                }
                .and_then(|f| live::read(f, &ceilings))
                .map_err(|e| format!("{e:#}"));
                if tx.send((read, Instant::now())).is_err() {
                    return;
                }
                std::thread::sleep(interval.saturating_sub(started.elapsed()));
            }
        })
        .context("cannot start the thread that reads the trace")?;
    let mut terminal = ratatui::try_init().context("cannot set up the terminal")?;
    let shown = show(&mut terminal, &rx, interval);
    ratatui::restore();
    shown
}

fn show(terminal: &mut DefaultTerminal, rx: &Receiver<Reading>, interval: Duration) -> Result<()> {
    let mut live: Option<Live> = None;
    let mut read_at: Option<Instant> = None;
    let mut error: Option<String> = None;
    loop {
        loop {
            match rx.try_recv() {
                Ok((Ok(l), at)) => {
                    live = Some(l);
                    read_at = Some(at);
                    error = None;
                }
                Ok((Err(e), _)) => error = Some(e),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => bail!("the thread reading the trace stopped"),
            }
        }
        let status = match (&error, read_at) {
            (Some(e), _) => format!("cannot read the trace: {e}; trying again"),
            (None, Some(at)) => format!(
                "read {:.1} s ago, again every {:.1} s",
                at.elapsed().as_secs_f64(),
                interval.as_secs_f64()
            ),
            (None, None) => "reading the trace".to_string(),
        };
        terminal
            .draw(|f| super::screen::draw(f, live.as_ref(), &status))
            .context("cannot draw on the terminal")?;
        if event::poll(TICK).context("cannot read the terminal's keys")? {
            if let Event::Key(k) = event::read().context("cannot read the terminal's keys")? {
                let ctrl_c =
                    k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                let quit = matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) || ctrl_c;
                if k.kind == KeyEventKind::Press && quit {
                    return Ok(());
                }
            }
        }
    }
}
