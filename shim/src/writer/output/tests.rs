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
