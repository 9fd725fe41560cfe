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

#[cfg(test)]
mod tests {
    #[test]
    fn human_bytes() {
        assert_eq!(super::human_bytes(0), "0 B");
        assert_eq!(super::human_bytes(1023), "1023 B");
        assert_eq!(super::human_bytes(1536), "1.5 KiB");
        assert_eq!(super::human_bytes(3 << 30), "3.0 GiB");
    }
}
