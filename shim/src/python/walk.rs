//! Walks the calling thread's chain of Python frames, innermost first, telling where one
//! `_PyEval_EvalFrameDefault` invocation's frames end and the next older one's begin.
//!
//! Reads: `PyThreadState` (the frame pointer, or `cframe` and its `current_frame`), each frame's code
//! object (a tagged reference from 3.14, its tag bits cleared), its link to the older frame, and the
//! entry marker of its version (see [`Chain`]). Every code object is checked to be a `PyCode_Type`
//! before it is used (by [`walk`], or by the caller of [`chain`]); anything else ends the walk.
//! Never: write, call into the interpreter, or follow more than [`MAX_WALK`] links.
use super::layout::{Chain, Layout, OB_TYPE};
use super::memory::Memory;

/// Most frames followed per walk (a runaway chain is cut, not followed).
pub const MAX_WALK: usize = 256;

/// Most Python frames added to one stack.
pub const MAX_PY_FRAMES: usize = 128;

/// What the walk meets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A Python frame at `frame`, running the code object at `code`.
    Frame { frame: usize, code: usize },
    /// The frames since the last boundary were run by one `_PyEval_EvalFrameDefault` invocation.
    Boundary,
}

/// Why a walk stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bad {
    /// A word could not be read.
    Unreadable(usize),
    /// What should be a code object is not one.
    NotCode(usize),
}

/// Walks the frames of the thread whose state is at `tstate`, calling `visit` for each step; stops
/// when `visit` returns false. Each frame's code object is checked to be one before `visit` sees it.
pub fn walk<M: Memory>(
    mem: &M,
    l: &Layout,
    code_type: usize,
    tstate: usize,
    mut visit: impl FnMut(Step) -> bool,
) -> Result<(), Bad> {
    let mut bad = None;
    chain(mem, l, tstate, |step| {
        if let Step::Frame { code, .. } = step {
            match mem.word(code + OB_TYPE) {
                Some(t) if t == code_type => {}
                Some(_) => bad = Some(Bad::NotCode(code)),
                None => bad = Some(Bad::Unreadable(code + OB_TYPE)),
            }
            if bad.is_some() {
                return false;
            }
        }
        visit(step)
    })?;
    bad.map_or(Ok(()), Err)
}

/// As [`walk`], without checking the code objects: a frame's `code` is what the frame points at,
/// which may be anything. For a caller that reads every code object of the chain at once, before it
/// uses any, and checks each itself (a lent walk, whose every read is a system call).
pub fn chain<M: Memory>(
    mem: &M,
    l: &Layout,
    tstate: usize,
    mut visit: impl FnMut(Step) -> bool,
) -> Result<(), Bad> {
    let read = |a: usize| mem.word(a).ok_or(Bad::Unreadable(a));
    let mut frame = read(tstate + l.tstate_frame)?;
    match l.chain {
        Chain::EntryFlag { cframe_current, .. } => {
            frame = if frame == 0 {
                0
            } else {
                read(frame + cframe_current)?
            }
        }
        Chain::EntryFrames {
            cframe_current: Some(off),
            ..
        } => {
            frame = if frame == 0 { 0 } else { read(frame + off)? };
        }
        _ => {}
    }
    for _ in 0..MAX_WALK {
        if frame == 0 {
            break;
        }
        let entry_frame = match l.chain {
            Chain::EntryFrames {
                owner,
                owned_by_cstack,
                ..
            } => {
                mem.u8(frame + owner)
                    .ok_or(Bad::Unreadable(frame + owner))?
                    == owned_by_cstack
            }
            _ => false,
        };
        if entry_frame {
            if !visit(Step::Boundary) {
                return Ok(());
            }
        } else {
            let code = read(frame + l.frame_code)? & !l.frame_code_tags;
            if !visit(Step::Frame { frame, code }) {
                return Ok(());
            }
            let ends_invocation = match l.chain {
                Chain::FrameObjects => true,
                Chain::EntryFlag { is_entry, .. } => {
                    mem.u8(frame + is_entry)
                        .ok_or(Bad::Unreadable(frame + is_entry))?
                        != 0
                }
                Chain::EntryFrames { .. } => false,
            };
            if ends_invocation && !visit(Step::Boundary) {
                return Ok(());
            }
        }
        frame = read(frame + l.frame_previous)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::layout::for_minor;
    use super::super::memory::Direct;
    use super::*;

    /// Fake objects in plain memory, laid out as `l` says.
    struct Fake {
        words: Vec<u64>,
    }

    impl Fake {
        fn new() -> Fake {
            Fake {
                words: vec![0; 4096],
            }
        }
        fn base(&self) -> usize {
            self.words.as_ptr() as usize
        }
        fn at(&self, i: usize) -> usize {
            self.base() + i * 8
        }
        fn set(&mut self, addr: usize, v: u64) {
            let i = (addr - self.base()) / 8;
            self.words[i] = v;
        }
        fn set_u8(&mut self, addr: usize, v: u8) {
            let i = (addr - self.base()) / 8;
            let mut b = self.words[i].to_ne_bytes();
            b[(addr - self.base()) % 8] = v;
            self.words[i] = u64::from_ne_bytes(b);
        }
    }

    const CODE_TYPE: usize = 0x1234_5678;

    fn collect(_memory: &Fake, l: &Layout, tstate: usize) -> (Vec<Step>, Result<(), Bad>) {
        let mut steps = Vec::new();
        let r = walk(&Direct, l, CODE_TYPE, tstate, |s| {
            steps.push(s);
            true
        });
        (steps, r)
    }

    #[test]
    fn python_3_12_entry_frames_split_invocations() {
        let l = for_minor(12).unwrap();
        let mut f = Fake::new();
        let (tstate, cframe, code) = (f.at(0), f.at(100), f.at(200));
        let (inner, entry, outer, entry2) = (f.at(300), f.at(400), f.at(500), f.at(600));
        f.set(code + OB_TYPE, CODE_TYPE as u64);
        f.set(tstate + l.tstate_frame, cframe as u64);
        f.set(cframe, inner as u64);
        for (fr, prev) in [(inner, entry), (entry, outer), (outer, entry2), (entry2, 0)] {
            f.set(fr + l.frame_code, code as u64);
            f.set(fr + l.frame_previous, prev as u64);
        }
        let Chain::EntryFrames {
            owner,
            owned_by_cstack,
            ..
        } = l.chain
        else {
            panic!("3.12 pushes entry frames")
        };
        f.set_u8(entry + owner, owned_by_cstack);
        f.set_u8(entry2 + owner, owned_by_cstack);
        let (steps, r) = collect(&f, l, tstate);
        assert_eq!(r, Ok(()));
        assert_eq!(
            steps,
            vec![
                Step::Frame { frame: inner, code },
                Step::Boundary,
                Step::Frame { frame: outer, code },
                Step::Boundary
            ]
        );
    }

    #[test]
    fn python_3_14_stackrefs_lose_their_tag_and_entry_frames_still_split() {
        let l = for_minor(14).unwrap();
        let Chain::EntryFrames {
            owner,
            owned_by_cstack,
            ..
        } = l.chain
        else {
            panic!("3.14 pushes entry frames")
        };
        let mut f = Fake::new();
        let (tstate, code, none) = (f.at(0), f.at(200), f.at(250));
        let (inner, entry, outer) = (f.at(300), f.at(400), f.at(500));
        f.set(code + OB_TYPE, CODE_TYPE as u64);
        f.set(tstate + l.tstate_frame, inner as u64);
        // A deferred or immortal reference has Py_TAG_REFCNT (bit 0) set; the entry frame holds
        // PyStackRef_None, tagged too, and is never read as code.
        f.set(inner + l.frame_code, code as u64 | 1);
        f.set(entry + l.frame_code, none as u64 | 1);
        f.set(outer + l.frame_code, code as u64);
        f.set(inner + l.frame_previous, entry as u64);
        f.set(entry + l.frame_previous, outer as u64);
        f.set_u8(entry + owner, owned_by_cstack);
        let (steps, r) = collect(&f, l, tstate);
        assert_eq!(r, Ok(()));
        assert_eq!(
            steps,
            vec![
                Step::Frame { frame: inner, code },
                Step::Boundary,
                Step::Frame { frame: outer, code },
            ]
        );
        // Before 3.14 the word is a plain pointer: a set low bit is not a tag, and that is no code.
        let l13 = for_minor(13).unwrap();
        assert_eq!(l13.frame_code_tags, 0);
    }

    #[test]
    fn python_3_11_is_entry_ends_an_invocation_after_its_frame() {
        let l = for_minor(11).unwrap();
        let Chain::EntryFlag {
            cframe_current,
            is_entry,
        } = l.chain
        else {
            panic!("3.11 uses is_entry")
        };
        let mut f = Fake::new();
        let (tstate, cframe, code) = (f.at(0), f.at(100), f.at(200));
        let (a, b, c) = (f.at(300), f.at(400), f.at(500));
        f.set(code + OB_TYPE, CODE_TYPE as u64);
        f.set(tstate + l.tstate_frame, cframe as u64);
        f.set(cframe + cframe_current, a as u64);
        for (fr, prev) in [(a, b), (b, c), (c, 0)] {
            f.set(fr + l.frame_code, code as u64);
            f.set(fr + l.frame_previous, prev as u64);
        }
        f.set_u8(b + is_entry, 1);
        f.set_u8(c + is_entry, 1);
        let (steps, r) = collect(&f, l, tstate);
        assert_eq!(r, Ok(()));
        let frame = |frame| Step::Frame { frame, code };
        assert_eq!(
            steps,
            vec![frame(a), frame(b), Step::Boundary, frame(c), Step::Boundary]
        );
    }

    #[test]
    fn something_that_is_not_code_ends_the_walk_with_an_error() {
        let l = for_minor(10).unwrap();
        let mut f = Fake::new();
        let (tstate, frame, not_code) = (f.at(0), f.at(100), f.at(200));
        f.set(tstate + l.tstate_frame, frame as u64);
        f.set(frame + l.frame_code, not_code as u64);
        let (steps, r) = collect(&f, l, tstate);
        assert!(steps.is_empty());
        assert_eq!(r, Err(Bad::NotCode(not_code)));
    }

    #[test]
    fn a_cycle_is_cut() {
        let l = for_minor(9).unwrap();
        let mut f = Fake::new();
        let (tstate, frame, code) = (f.at(0), f.at(100), f.at(200));
        f.set(code + OB_TYPE, CODE_TYPE as u64);
        f.set(tstate + l.tstate_frame, frame as u64);
        f.set(frame + l.frame_code, code as u64);
        f.set(frame + l.frame_previous, frame as u64);
        let (steps, r) = collect(&f, l, tstate);
        assert_eq!(r, Ok(()));
        assert_eq!(steps.len(), 2 * MAX_WALK);
    }
}
