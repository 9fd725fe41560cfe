//! The trace file's tests: names, modes, planted symlinks, and a program that takes the
//! descriptor back or replaces the file.
use super::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

#[test]
fn stems() {
    assert_eq!(file_stem("/usr/bin/python3.12"), "python3.12");
    assert_eq!(file_stem("/x/we ird$name"), "we_ird_name");
    assert_eq!(file_stem(""), "process");
}

#[test]
fn creates_0600_and_never_follows_a_planted_symlink() {
    let dir = std::env::temp_dir().join(format!("memshim-output-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let victim = dir.join("victim");
    std::fs::write(&victim, b"keep").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("prog.7.mshim")).unwrap();
    let (mut f, path) = create(dir.to_str().unwrap(), "/bin/prog", 7, None).unwrap();
    f.write_all(b"x").unwrap();
    assert_eq!(path, dir.join("prog.7.1.mshim"));
    let (_, ranked) = create(
        dir.to_str().unwrap(),
        "/bin/prog",
        7,
        Some(("gpu3.site", 5)),
    )
    .unwrap();
    assert_eq!(ranked, dir.join("prog.gpu3.rank5.7.mshim"));
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert!(meta.file_type().is_file());
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    assert_eq!(meta.nlink(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

mod reuse {
    use super::*;

    #[test]
    fn the_trace_stays_out_of_the_programs_descriptors_and_files() {
        let dir = std::env::temp_dir().join(format!("memshim-reuse-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (mut f, path) = create(dir.to_str().unwrap(), "/bin/prog", 8, None).unwrap();
        // The trace's descriptor sits high, out of the range the program's opens take (the other
        // tests of this process open files meanwhile, so the lowest free number says nothing here).
        let held = f.held.as_ref().unwrap().as_raw_fd();
        assert!(held >= sys::high_floor(), "{held}");
        f.write_all(b"frame1").unwrap();
        // The program closes the trace's descriptor (as a daemon closing everything would): for a
        // moment nothing is opened (the program is opening its own files), the frame waits.
        crate::sys::owned_fds::released(held, held);
        f.write_all(b"frame2").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"frame1");
        std::thread::sleep(std::time::Duration::from_millis(300));
        f.write_all(b"frame3").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"frame1frame2frame3");
        let again = f.held.as_ref().unwrap().as_raw_fd();
        assert!(again >= sys::high_floor(), "kept again, high: {again}");
        // The file is replaced (removed, and a file of the program's takes its name, often with the
        // inode number just freed).
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"log\n").unwrap();
        let err = f.write_all(b"frame4").unwrap_err();
        assert!(err.to_string().contains("replaced"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"log\n");
        // A symlink planted at the path is never followed.
        std::fs::remove_file(&path).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        assert!(f.write_all(b"frame5").is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

mod past_a_size_limit {
    use super::*;

    /// Past a file-size limit the frames go into the room through a mapping: the file is the room's
    /// length meanwhile, a cut-back frame reads as zeros, and the end leaves exactly the frames.
    /// (No limit is set here: it would hold for every test of this process.)
    #[test]
    fn frames_stored_in_the_room_read_back_exactly_and_the_end_gives_it_back() {
        let dir = std::env::temp_dir().join(format!("memshim-room-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (mut f, path) = create(dir.to_str().unwrap(), "/bin/prog", 9, None).unwrap();
        f.write_all(b"before the limit|").unwrap();
        assert!(
            !f.before_size_limit(u64::MAX - 1),
            "a limit far off needs no room"
        );
        assert!(f.before_size_limit(64 << 10));
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(len, 17 + room::ROOM);
        // A frame that crosses a page boundary, and one far past the limit.
        let big: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8 + 1).collect();
        f.write_all(&big).unwrap();
        let mark = f.mark();
        f.write_all(b"dropped at a failed exec").unwrap();
        f.cut_back(mark).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            bytes[17 + big.len()..].iter().all(|&b| b == 0),
            "cut back to zeros"
        );
        f.write_all(b"|after").unwrap();
        assert!(f.before_size_limit(1), "taken once, kept");
        assert!(f.finish_pending().is_none());
        let mut want = b"before the limit|".to_vec();
        want.extend(&big);
        want.extend(b"|after");
        assert_eq!(std::fs::read(&path).unwrap(), want);
        drop(f);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A frame that does not fit in what is left of the room waits in memory, as under any limit.
    #[test]
    fn a_frame_past_the_room_is_refused_with_efbig() {
        let r = room::Room { end: 100 };
        let e = r.store(-1, 90, &[1; 20]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EFBIG));
        assert!(may_pass(&e));
    }
}
