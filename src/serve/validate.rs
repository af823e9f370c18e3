//! Tool arguments checked against the tool's own input schema before dispatch,
//! so a wrong call gets a message naming the field and the rule it broke
//! (`limit: must be between 1 and 20, got 50`) instead of a serde error.
//!
//! Covers the JSON Schema the tool contracts use: `type`, `anyOf`, `enum`,
//! `required`, `properties`, `additionalProperties: false`, `items`,
//! `minLength`/`maxLength` (in characters), `minimum`/`maximum`. Two
//! normalizations are applied in place: an integer written as a float (`3.0`)
//! becomes an integer, and `null` for an optional property whose schema does
//! not allow null is removed, so the default applies (models send such nulls
//! for "unset").

use serde_json::{Map, Value};

/// Every way some arguments break their schema, each naming the field and
/// the rule; shown `; `-joined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.join("; "))]
pub struct InvalidArgs(pub Vec<String>);

/// Check `args` against `schema` (an object schema), reporting all problems.
pub fn validate_args(
    schema: &Map<String, Value>,
    args: &mut Map<String, Value>,
) -> Result<(), InvalidArgs> {
    let mut errors = Vec::new();
    check_object(schema, args, "", &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(InvalidArgs(errors))
    }
}

fn field(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn check_object(
    schema: &Map<String, Value>,
    obj: &mut Map<String, Value>,
    path: &str,
    errors: &mut Vec<String>,
) {
    let props = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for key in &required {
        if !obj.contains_key(*key) {
            errors.push(format!("{}: required", field(path, key)));
        }
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        let known: Vec<&str> = props
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let mut unknown: Vec<&String> = obj
            .keys()
            .filter(|k| !known.contains(&k.as_str()))
            .collect();
        unknown.sort();
        for k in unknown {
            errors.push(format!(
                "{}: unknown argument (expected one of: {})",
                field(path, k),
                known.join(", ")
            ));
        }
    }
    let Some(props) = props else { return };
    let mut drop = Vec::new();
    for (key, sub) in props {
        let Some(value) = obj.get_mut(key) else {
            continue;
        };
        if value.is_null() && !required.contains(&key.as_str()) && !accepts_null(sub) {
            drop.push(key.clone());
            continue;
        }
        check(sub, value, &field(path, key), errors);
    }
    for key in drop {
        obj.remove(&key);
    }
}

fn accepts_null(schema: &Value) -> bool {
    match schema.get("anyOf").and_then(Value::as_array) {
        Some(branches) => branches.iter().any(accepts_null),
        None => types(schema).is_none_or(|t| t.contains(&"null")),
    }
}

/// The schema's `type` as a list (`"string"` or `["string", "null"]`).
fn types(schema: &Value) -> Option<Vec<&str>> {
    match schema.get("type")? {
        Value::String(t) => Some(vec![t.as_str()]),
        Value::Array(ts) => Some(ts.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

fn has_type(value: &Value, t: &str) -> bool {
    match t {
        "string" => value.is_string(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        _ => true,
    }
}

fn article(t: &str) -> String {
    match t {
        "integer" | "object" | "array" => format!("an {t}"),
        "null" => "null".to_string(),
        _ => format!("a {t}"),
    }
}

/// The value as quoted in a message: short, JSON-spelled.
fn shown(value: &Value) -> String {
    match value {
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
        Value::String(s) if s.chars().count() > 40 => {
            let head: String = s.chars().take(40).collect();
            format!("{}…", Value::String(head))
        }
        v => v.to_string(),
    }
}

fn check(schema: &Value, value: &mut Value, path: &str, errors: &mut Vec<String>) {
    if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
        check_any_of(branches, value, path, errors);
        return;
    }
    if let Some(ts) = types(schema) {
        if !ts.iter().any(|t| has_type(value, t)) {
            let want: Vec<String> = ts.iter().map(|t| article(t)).collect();
            errors.push(format!(
                "{path}: must be {}, got {}",
                want.join(" or "),
                shown(value)
            ));
            return;
        }
        if ts.contains(&"integer") && !value.is_i64() && !value.is_u64() {
            if let Some(f) = value.as_f64() {
                // has_type accepted it, so it has no fraction: `3.0` → `3`.
                *value = if f < 0.0 {
                    Value::from(f as i64)
                } else {
                    Value::from(f as u64)
                };
            }
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.iter().any(|a| same(a, value)) {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            errors.push(format!(
                "{path}: must be one of {}, got {}",
                list.join(", "),
                shown(value)
            ));
            return;
        }
    }
    match value {
        Value::String(s) => {
            let n = s.chars().count() as u64;
            let min = schema.get("minLength").and_then(Value::as_u64);
            let max = schema.get("maxLength").and_then(Value::as_u64);
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                let unit = if max.or(min) == Some(1) {
                    " character long"
                } else {
                    " characters long"
                };
                let rule = bounds(min.map(|m| m.to_string()), max.map(|m| m.to_string()), unit);
                errors.push(format!("{path}: must be {rule}, got {n}"));
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            let min = schema.get("minimum").filter(|m| m.is_number());
            let max = schema.get("maximum").filter(|m| m.is_number());
            let below = min.and_then(Value::as_f64).is_some_and(|m| x < m);
            let above = max.and_then(Value::as_f64).is_some_and(|m| x > m);
            if below || above {
                let rule = bounds(min.map(Value::to_string), max.map(Value::to_string), "");
                errors.push(format!("{path}: must be {rule}, got {n}"));
            }
        }
        Value::Object(obj) => {
            check_object(schema.as_object().unwrap_or(&Map::new()), obj, path, errors)
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    check(item_schema, item, &format!("{path}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}

/// `between A and B`, `at least A` or `at most B`, then `unit`.
fn bounds(min: Option<String>, max: Option<String>, unit: &str) -> String {
    match (min, max) {
        (Some(a), Some(b)) => format!("between {a} and {b}{unit}"),
        (Some(a), None) => format!("at least {a}{unit}"),
        (None, b) => format!("at most {}{unit}", b.unwrap_or_default()),
    }
}

/// Enum membership, with `2` and `2.0` the same.
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// The first branch that accepts the value wins; else the errors of the branch
/// of the value's type (`product: must be one of …`), else a type error.
fn check_any_of(branches: &[Value], value: &mut Value, path: &str, errors: &mut Vec<String>) {
    let mut typed_errors = None;
    for b in branches {
        let mut v = value.clone();
        let mut errs = Vec::new();
        check(b, &mut v, path, &mut errs);
        if errs.is_empty() {
            *value = v;
            return;
        }
        let of_type = types(b).is_some_and(|ts| ts.iter().any(|t| has_type(value, t)));
        if of_type && typed_errors.is_none() {
            typed_errors = Some(errs);
        }
    }
    match typed_errors {
        Some(errs) => errors.extend(errs),
        None => {
            let want: Vec<String> = branches
                .iter()
                .filter_map(types)
                .flatten()
                .map(article)
                .collect();
            errors.push(format!(
                "{path}: must be {}, got {}",
                want.join(" or "),
                shown(value)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Map<String, Value> {
        serde_json::from_str(include_str!("schemas/search_docs.input.json")).unwrap()
    }
    fn read_schema() -> Map<String, Value> {
        serde_json::from_str(include_str!("schemas/read_section.input.json")).unwrap()
    }

    fn run(schema: &Map<String, Value>, v: Value) -> Result<Map<String, Value>, String> {
        let mut args = v.as_object().unwrap().clone();
        validate_args(schema, &mut args)
            .map(|()| args)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn accepts_valid_and_normalizes() {
        let s = schema();
        assert!(run(&s, json!({"query": "hooks"})).is_ok());
        let a = run(
            &s,
            json!({"query": "hooks", "limit": 3.0, "product": null, "response_format": "detailed"}),
        )
        .unwrap();
        assert_eq!(a["limit"], json!(3));
        assert!(a["limit"].is_u64());
        assert_eq!(
            a["product"],
            Value::Null,
            "null is allowed for product, kept"
        );
        // null for a non-nullable optional field means "unset".
        let a = run(&read_schema(), json!({"url": "u", "offset": null})).unwrap();
        assert!(!a.contains_key("offset"));
        // The input schemas do not close their properties: extras pass.
        assert!(run(&s, json!({"query": "q", "extra": 1})).is_ok());
    }

    #[test]
    fn names_the_field_and_rule() {
        let s = schema();
        assert_eq!(run(&s, json!({})).unwrap_err(), "query: required");
        assert_eq!(
            run(&s, json!({"query": "q", "limit": 50})).unwrap_err(),
            "limit: must be between 1 and 20, got 50"
        );
        assert_eq!(
            run(&s, json!({"query": ""})).unwrap_err(),
            "query: must be between 1 and 500 characters long, got 0"
        );
        assert_eq!(
            run(&s, json!({"query": "é".repeat(501)})).unwrap_err(),
            "query: must be between 1 and 500 characters long, got 501"
        );
        assert!(
            run(&s, json!({"query": "é".repeat(500)})).is_ok(),
            "characters, not bytes"
        );
        assert_eq!(
            run(&s, json!({"query": 5})).unwrap_err(),
            "query: must be a string, got 5"
        );
        assert_eq!(
            run(&s, json!({"query": "q", "limit": 2.5})).unwrap_err(),
            "limit: must be an integer, got 2.5"
        );
        assert_eq!(
            run(&s, json!({"query": "q", "product": "vim"})).unwrap_err(),
            r#"product: must be one of "claude-code", "cursor", "codex", "mcp", got "vim""#
        );
        assert_eq!(
            run(&s, json!({"query": "q", "product": 3})).unwrap_err(),
            "product: must be a string or null, got 3"
        );
        assert_eq!(
            run(
                &s,
                json!({"query": "q", "response_format": "full", "limit": 0})
            )
            .unwrap_err(),
            r#"limit: must be between 1 and 20, got 0; response_format: must be one of "concise", "detailed", got "full""#
        );
        let r = read_schema();
        assert_eq!(
            run(&r, json!({"url": "u", "offset": -1})).unwrap_err(),
            "offset: must be at least 0, got -1"
        );
        assert_eq!(
            run(&r, json!({"url": "u", "outline_depth": 4})).unwrap_err(),
            "outline_depth: must be one of 2, 3, got 4"
        );
        assert_eq!(
            run(&r, json!({"url": "u", "heading": "h".repeat(301)})).unwrap_err(),
            "heading: must be at most 300 characters long, got 301"
        );
        assert_eq!(
            run(&r, json!({"url": "u", "heading": ["a"]})).unwrap_err(),
            "heading: must be a string or null, got an array"
        );
    }

    #[test]
    fn closed_objects_and_nested_paths() {
        let s: Map<String, Value> = serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "a": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}, "additionalProperties": false}}
            },
            "additionalProperties": false
        }))
        .unwrap();
        assert_eq!(
            run(&s, json!({"b": 1, "a": [{"n": 1}, {"n": 9, "m": 0}]})).unwrap_err(),
            "b: unknown argument (expected one of: a); a[1].m: unknown argument (expected one of: n); a[1].n: must be at most 3, got 9"
        );
    }
}
