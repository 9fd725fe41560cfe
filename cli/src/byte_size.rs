//! Byte sizes as people write them on a command line: `24MiB`, `1.5G`, `512K`, `100 MB`, `4096`.
//! Every suffix is a power of 1024 (`K`, `KB` and `KiB` are the same), as pytest-memray and the
//! shim's `MEMSHIM_SAMPLE_BYTES` read them; case does not matter. The one parser of sizes in the CLI.

/// Parses `s` into bytes, or says what is wrong with it.
pub fn parse(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = (&t[..split], t[split..].trim());
    let what = || format!("`{s}` is not a size (write it like 24MiB, 1.5G, 512K or 4096)");
    if number.is_empty() || number.matches('.').count() > 1 {
        return Err(what());
    }
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => return Err(what()),
    };
    if let Ok(whole) = number.parse::<u64>() {
        return whole
            .checked_mul(1u64 << shift)
            .ok_or_else(|| format!("`{s}` is more bytes than 64 bits can count"));
    }
    let value: f64 = number.parse().map_err(|_| what())?;
    let bytes = (value * (1u64 << shift) as f64).round();
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("`{s}` is more bytes than 64 bits can count"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn plain_bytes_and_binary_suffixes() {
        assert_eq!(parse("4096"), Ok(4096));
        assert_eq!(parse("0"), Ok(0));
        assert_eq!(parse("12B"), Ok(12));
        assert_eq!(parse("512K"), Ok(512 * 1024));
        assert_eq!(parse("24MiB"), Ok(24 << 20));
        assert_eq!(parse("24 MB"), Ok(24 << 20));
        assert_eq!(parse("1.5G"), Ok(3 << 29));
        assert_eq!(parse("2gib"), Ok(2 << 30));
        assert_eq!(parse("1T"), Ok(1 << 40));
    }

    #[test]
    fn fractions_round_to_the_nearest_byte() {
        assert_eq!(parse("0.5K"), Ok(512));
        assert_eq!(parse("1.0001K"), Ok(1024));
    }

    #[test]
    fn nonsense_is_refused_with_the_input_named() {
        for bad in ["", "MiB", "-1M", "1.2.3K", "12 apples", "1e9", "0x10"] {
            let e = parse(bad).expect_err(bad);
            assert!(e.contains(&format!("`{bad}`")), "{e}");
        }
        assert!(parse("20000000P").unwrap_err().contains("64 bits"));
        assert!(parse("18446744073709551615K")
            .unwrap_err()
            .contains("64 bits"));
    }
}
