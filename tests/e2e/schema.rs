//! Checks reports against `docs/report.schema.json`, the published contract. A small validator for
//! the keywords that schema uses (type, required, properties, items, prefixItems, min/maxItems, enum,
//! const, minimum, pattern for hex addresses, $ref), strict about unknown fields: a field the schema
//! does not list is an error, so the schema (and docs/report-schema.md) cannot fall behind the code.
use std::sync::OnceLock;

use serde_json::Value;

fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/report.schema.json");
        let text = std::fs::read_to_string(&path).expect("docs/report.schema.json");
        serde_json::from_str(&text).expect("the schema is JSON")
    })
}

/// Every way `report` departs from the schema, as "path: problem" lines.
pub fn errors(report: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(report, schema(), "$", &mut out);
    out
}

fn type_ok(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        other => panic!("the validator does not know type {other}"),
    }
}

fn check(v: &Value, s: &Value, path: &str, out: &mut Vec<String>) {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").expect("local $ref");
        return check(v, &schema()["$defs"][name], path, out);
    }
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(t) => type_ok(v, t),
            Value::Array(ts) => ts
                .iter()
                .any(|t| type_ok(v, t.as_str().expect("type name"))),
            _ => panic!("bad type in schema at {path}"),
        };
        if !ok {
            out.push(format!("{path}: {v} is not of type {t}"));
            return;
        }
    }
    if let Some(c) = s.get("const") {
        if v != c {
            out.push(format!("{path}: {v} is not {c}"));
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            out.push(format!("{path}: {v} is not one of {e:?}"));
        }
    }
    if let (Some(min), Some(n)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if n < min {
            out.push(format!("{path}: {n} is below {min}"));
        }
    }
    if let Some(p) = s.get("pattern").and_then(Value::as_str) {
        assert_eq!(
            p, "^0x[0-9a-f]+$",
            "the validator knows only the hex-address pattern"
        );
        let ok = v
            .as_str()
            .and_then(|x| x.strip_prefix("0x"))
            .is_some_and(|h| {
                !h.is_empty()
                    && h.bytes()
                        .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
            });
        if !ok {
            out.push(format!("{path}: {v} is not a hex address"));
        }
    }
    if let Some(obj) = v.as_object() {
        let props = s.get("properties").and_then(Value::as_object);
        for r in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let r = r.as_str().expect("required names");
            if !obj.contains_key(r) {
                out.push(format!("{path}: missing {r}"));
            }
        }
        if let Some(props) = props {
            for (k, val) in obj {
                match props.get(k) {
                    Some(ps) => check(val, ps, &format!("{path}.{k}"), out),
                    None => out.push(format!("{path}: {k} is not in the schema")),
                }
            }
        }
    }
    if let Some(arr) = v.as_array() {
        if let Some(n) = s.get("minItems").and_then(Value::as_u64) {
            if (arr.len() as u64) < n {
                out.push(format!("{path}: fewer than {n} items"));
            }
        }
        if let Some(n) = s.get("maxItems").and_then(Value::as_u64) {
            if (arr.len() as u64) > n {
                out.push(format!("{path}: more than {n} items"));
            }
        }
        if let Some(prefix) = s.get("prefixItems").and_then(Value::as_array) {
            for (i, (item, ps)) in arr.iter().zip(prefix).enumerate() {
                check(item, ps, &format!("{path}[{i}]"), out);
            }
        } else if let Some(items) = s.get("items") {
            for (i, item) in arr.iter().enumerate() {
                check(item, items, &format!("{path}[{i}]"), out);
            }
        }
    }
}

#[test]
fn the_validator_catches_what_it_should() {
    let ok = serde_json::json!({"schema": "memshim.report/2", "processes": [], "ranks": null, "unreadable": [], "frame_table": []});
    assert!(errors(&ok).is_empty(), "{:?}", errors(&ok));
    let bad =
        serde_json::json!({"schema": "memshim.report/1", "processes": [{"pid": -1}], "extra": 1});
    let e = errors(&bad);
    assert!(
        e.iter().any(|x| x.contains("is not \"memshim.report/2\"")),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|x| x.contains("$: extra is not in the schema")),
        "{e:?}"
    );
    assert!(
        e.iter().any(|x| x.contains("$.processes[0]: missing exe")),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|x| x.contains("$.processes[0].pid: -1 is below 0")),
        "{e:?}"
    );
}
