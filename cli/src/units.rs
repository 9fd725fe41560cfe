//! Units for people, shared by the report's findings and every renderer: below both, so that neither
//! has to reach into the other for a number's spelling.

/// Bytes for people: `512 B`, `1.5 KiB`, `3.2 GiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// A count for people, with thousands separators: `1,017`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count and its noun, singular for one: `1 block`, `1,017 blocks`. `noun` is the singular;
/// a plural passed in (`blocks`) is taken back to its singular first, so callers may give either
/// (nouns whose plural is more than an `s`, or that end in `ss`, are given as singulars).
pub fn blocks(n: u64, noun: &str) -> String {
    let one = match noun.strip_suffix('s') {
        Some(one) if !one.ends_with('s') => one,
        _ => noun,
    };
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{} {one}s", thousands(n))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_for_people() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(1017), "1,017");
        assert_eq!(super::thousands(12_345_678), "12,345,678");
        assert_eq!(super::blocks(1, "blocks"), "1 block");
        assert_eq!(super::blocks(1, "site"), "1 site");
        assert_eq!(super::blocks(0, "mapping"), "0 mappings");
        assert_eq!(super::blocks(1017, "allocation"), "1,017 allocations");
    }

    #[test]
    fn human_bytes() {
        assert_eq!(super::human_bytes(0), "0 B");
        assert_eq!(super::human_bytes(1023), "1023 B");
        assert_eq!(super::human_bytes(1536), "1.5 KiB");
        assert_eq!(super::human_bytes(3 << 30), "3.0 GiB");
    }
}
