use super::*;

#[test]
fn patterns_match_as_leak_sanitizer_matches_them() {
    assert!(matches("leak_malloc", "leak_malloc"));
    assert!(matches("malloc", "leak_malloc"));
    assert!(matches("leak_*loc", "leak_calloc"));
    assert!(matches("^leak_", "leak_calloc"));
    assert!(!matches("^calloc", "leak_calloc"));
    assert!(matches("alloc$", "leak_calloc"));
    assert!(!matches("leak$", "leak_calloc"));
    assert!(matches("^leak_calloc$", "leak_calloc"));
    assert!(!matches("^leak_c$", "leak_calloc"));
    assert!(matches("libfoo.so*", "/usr/lib/libfoo.so.1"));
    assert!(matches("*/third_party/*", "/src/third_party/z.c"));
    assert!(!matches("a*b*c", "acb"));
}

#[test]
fn a_file_has_rules_and_comments_and_bad_lines_say_where() {
    let s = Suppressions::parse(
        "# glibc's\n\nleak:_IO_file_doallocate\n  leak:libfoo.so  \n",
        "supp.txt",
    )
    .unwrap();
    assert_eq!(
        s.rules,
        [
            Rule {
                pattern: "_IO_file_doallocate".into(),
                at: "supp.txt:3".into()
            },
            Rule {
                pattern: "libfoo.so".into(),
                at: "supp.txt:4".into()
            }
        ]
    );
    let err = |text: &str| Suppressions::parse(text, "s.supp").unwrap_err().to_string();
    assert!(
        err("leak:a\nfoo\n")
            .starts_with("s.supp:2: `foo` is not a suppression: write `leak:PATTERN`"),
        "{}",
        err("leak:a\nfoo\n")
    );
    assert!(err("race:x").starts_with("s.supp:1: `race:` suppressions are not supported"));
    assert!(err("leak:*").starts_with("s.supp:1: `leak:*` has no pattern"));
    assert!(err("leak:").contains("name a function, file or module"));
}

#[test]
fn a_matched_site_is_set_apart_with_its_rule() {
    let mut report = crate::render::fixture_report();
    let host = &report.processes[0].leaks.host;
    let (before, target) = (host.program_bytes, &host.sites[0]);
    let func = target
        .frames
        .iter()
        .find_map(|f| f.function.clone())
        .unwrap();
    let (bytes, count) = (target.bytes, target.count);
    let s = Suppressions::parse(&format!("leak:^{func}$\n"), "f").unwrap();
    apply(&mut report, &s);
    let host = &report.processes[0].leaks.host;
    assert_eq!(host.suppressed_bytes, bytes);
    assert_eq!(host.suppressed_count, count);
    assert_eq!(host.program_bytes, before - bytes);
    assert_eq!(
        host.sites[0].suppressed_by.as_deref(),
        Some(format!("leak:^{func}$ (f:1)").as_str())
    );
    assert!(host.sites[1..].iter().all(|s| s.suppressed_by.is_none()));
}
