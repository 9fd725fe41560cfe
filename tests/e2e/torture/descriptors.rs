//! A program that owns every descriptor: it closes them all and opens its own, or dup2s its own file
//! over all of them. The shim must neither close nor write into the program's descriptors.
use super::build::c;
use super::harness::Case;

const NO_ARGS: [&str; 0] = [];

/// `close_all HOW`: the program's 8 new descriptors stay its own, and the leak after them is seen.
fn close_all(how: &str) {
    let case = Case::new(&format!("close_all_{how}"), &c("close_all"), &[how]);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "fds 3 4 5 6 7 8 9 10\nfiles ok 8\n");
    case.assert_leaks(
        "close_all",
        &["after_close_leak"],
        &[("after_close_leak", 1000, 1)],
    );
}

#[test]
fn closes_every_descriptor_and_opens_its_own() {
    close_all("loop");
}

#[test]
fn closefrom_and_opens_its_own() {
    close_all("closefrom");
}

#[test]
fn close_range_syscall_and_opens_its_own() {
    close_all("close_range");
}

#[test]
fn dup2s_its_own_file_over_every_descriptor() {
    let case = Case::new("dup2_all", &c("dup2_all"), &NO_ARGS);
    let bare = case.all();
    assert_eq!(bare.stdout_str(), "data 6 ok\n");
    let data = std::fs::read(case.dir.path("data")).expect("the program's data file");
    assert_eq!(data, b"hello\n", "the program's file after the traced runs");
    case.assert_leaks(
        "dup2_all",
        &["after_dup_leak"],
        &[("after_dup_leak", 1000, 1)],
    );
}
