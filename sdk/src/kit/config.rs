//! Field validators for a typed provider config: `deserialize_with` functions that check the
//! forms and ranges a JSON type cannot say, and fail with the *expected form* only.
//!
//! The SDK parses each call's config into the provider's config type before a hook runs and
//! answers a field that does not fit with its path and what was expected, never the value
//! (`environmentValidateConfig`: `{ok: false, errors: ["config.user: expected uid:gid with a
//! uid other than 0"]}`). Every validator here reports through [`refuse`], which carries only
//! the expected form, so a secret pasted into the wrong key never reaches an answer or a log.
//!
//! ```
//! use paperclip_sandbox_sdk::kit::config as check;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize)]
//! #[serde(rename_all = "camelCase")]
//! struct MyConfig {
//!     #[serde(default, deserialize_with = "check::whole::<_, 64, 65_536>")]
//!     memory_mb: Option<u64>,
//!     #[serde(default, deserialize_with = "check::user")]
//!     user: Option<String>,
//! }
//!
//! let c: MyConfig = serde_json::from_str(r#"{"memoryMb": 1024.0, "user": "1000:1000"}"#).unwrap();
//! assert_eq!(c.memory_mb, Some(1024));
//! assert_eq!(check::user_ids(c.user.as_deref(), (1, 1)), (1000, 1000));
//! assert!(serde_json::from_str::<MyConfig>(r#"{"user": "0:0"}"#).is_err());
//! ```
//!
//! Every validator maps an absent key or `null` to `None`.

use serde::de::{Error, Unexpected};
use serde::{Deserialize, Deserializer};

/// The error of a field that does not fit: "expected `expected`", without the value (the SDK
/// keeps only that part of a deserializer's message).
pub fn refuse<E: Error>(expected: &str) -> E {
    E::invalid_value(Unexpected::Other("a value"), &expected)
}

/// A string field that `ok` accepts; otherwise (or not a string) [`refuse`]`(expected)`.
pub fn checked<'de, D: Deserializer<'de>>(
    d: D,
    ok: fn(&str) -> bool,
    expected: &str,
) -> Result<Option<String>, D::Error> {
    match Option::<String>::deserialize(d).map_err(|_| refuse::<D::Error>(expected))? {
        Some(v) if !ok(&v) => Err(refuse(expected)),
        v => Ok(v),
    }
}

/// A whole number from `MIN` to `MAX`: "expected a whole number from MIN to MAX" otherwise. A
/// whole-valued float (`1024.0`) counts, as JSON Schema's `integer` says.
pub fn whole<'de, D: Deserializer<'de>, const MIN: u64, const MAX: u64>(
    d: D,
) -> Result<Option<u64>, D::Error> {
    let as_whole = |n: &serde_json::Number| {
        n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= MAX as f64)
                .map(|f| f as u64)
        })
    };
    let expected = || refuse(&format!("a whole number from {MIN} to {MAX}"));
    match Option::<serde_json::Number>::deserialize(d) {
        Ok(None) => Ok(None),
        Ok(Some(n)) => match as_whole(&n) {
            Some(n) if (MIN..=MAX).contains(&n) => Ok(Some(n)),
            _ => Err(expected()),
        },
        Err(_) => Err(expected()),
    }
}

/// A CPU count from 0.01 to 1024 (fractions allowed): "expected a number from 0.01 to 1024".
pub fn cpus<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    match Option::<f64>::deserialize(d) {
        Ok(n) if n.is_none_or(|n| (0.01..=1024.0).contains(&n)) => Ok(n),
        _ => Err(refuse("a number from 0.01 to 1024")),
    }
}

/// `true` or `false`: "expected true or false".
pub fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Option::<bool>::deserialize(d).map_err(|_| refuse("true or false"))
}

/// An image reference ([`is_image_ref`]): "expected an image reference".
pub fn image<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(d, is_image_ref, "an image reference")
}

/// `uid:gid` with a uid other than 0 ([`is_user`]): "expected uid:gid with a uid other than
/// 0". [`user_ids`] reads it.
pub fn user<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(d, is_user, "uid:gid with a uid other than 0")
}

/// True for an image reference: 1 to 255 characters of ASCII letters, digits and `._-/:@`.
pub fn is_image_ref(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 255
        && v.chars().all(|c| c.is_ascii_alphanumeric() || "._-/:@".contains(c))
}

/// True for `uid:gid`, both 32-bit numbers, the uid not 0 (root).
pub fn is_user(v: &str) -> bool {
    user_of(v).is_some_and(|(u, _)| u != 0)
}

fn user_of(v: &str) -> Option<(u32, u32)> {
    let (u, g) = v.split_once(':')?;
    Some((u.parse().ok()?, g.parse().ok()?))
}

/// The `(uid, gid)` of a `uid:gid` field, `default` when absent (or not of that form).
pub fn user_ids(user: Option<&str>, default: (u32, u32)) -> (u32, u32) {
    user.and_then(user_of).unwrap_or(default)
}

/// True for an absolute, normalized directory path usable as a mount point: not `/`, no
/// empty, `.` or `..` component, no trailing `/`, and none of NUL, `:` and `,` (which mount
/// specifications split on).
pub fn is_absolute_dir(v: &str) -> bool {
    v.starts_with('/')
        && v.len() > 1
        && v.split('/').all(|c| c != ".." && c != ".")
        && !v.contains("//")
        && !v.ends_with('/')
        && !v.contains(['\0', ':', ','])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Fields {
        #[serde(default, deserialize_with = "whole::<_, 16, 1024>")]
        size: Option<u64>,
        #[serde(default, deserialize_with = "cpus")]
        cpus: Option<f64>,
        #[serde(default, deserialize_with = "flag")]
        flag: Option<bool>,
        #[serde(default, deserialize_with = "image")]
        image: Option<String>,
        #[serde(default, deserialize_with = "user")]
        user: Option<String>,
    }

    fn parse(v: Value) -> Result<Fields, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    #[test]
    fn values_that_fit_and_absent_or_null_keys() {
        let f = parse(json!({
            "size": 16, "cpus": 0.5, "flag": true, "image": "reg.io/a/b:1@sha256:00", "user": "5:0"
        }))
        .unwrap();
        assert_eq!((f.size, f.cpus, f.flag), (Some(16), Some(0.5), Some(true)));
        assert_eq!(
            (f.image.as_deref(), f.user.as_deref()),
            (Some("reg.io/a/b:1@sha256:00"), Some("5:0"))
        );
        assert_eq!(parse(json!({"size": 1024.0})).unwrap().size, Some(1024));
        let f = parse(json!({"size": null, "user": null})).unwrap();
        assert_eq!((f.size, f.user, f.cpus), (None, None, None));
    }

    #[test]
    fn values_that_do_not_fit_say_the_form_and_never_the_value() {
        for (v, expected) in [
            (json!({"size": 15}), "expected a whole number from 16 to 1024"),
            (json!({"size": 1025}), "expected a whole number from 16 to 1024"),
            (json!({"size": 16.5}), "expected a whole number from 16 to 1024"),
            (json!({"size": -16.0}), "expected a whole number from 16 to 1024"),
            (json!({"size": "secret-64"}), "expected a whole number from 16 to 1024"),
            (json!({"cpus": 0}), "expected a number from 0.01 to 1024"),
            (json!({"cpus": 2000}), "expected a number from 0.01 to 1024"),
            (json!({"flag": "secret-yes"}), "expected true or false"),
            (json!({"image": "bad image secret"}), "expected an image reference"),
            (json!({"image": 7}), "expected an image reference"),
            (json!({"user": "0:0"}), "expected uid:gid with a uid other than 0"),
            (json!({"user": "secret"}), "expected uid:gid with a uid other than 0"),
        ] {
            let e = parse(v).unwrap_err();
            assert!(e.contains(expected), "{e}");
            assert!(!e.contains("secret"), "the value is quoted: {e}");
        }
    }

    #[test]
    fn predicates_and_user_ids() {
        assert!(is_absolute_dir("/workspace/a"));
        for bad in ["/", "w", "/a/../b", "/a/./b", "/a//b", "/a/", "/a:b", "/a,b", "/a\0"] {
            assert!(!is_absolute_dir(bad), "{bad:?}");
        }
        assert!(!is_image_ref("") && !is_image_ref(&"a".repeat(256)) && is_image_ref("a"));
        assert!(is_user("1:0") && !is_user("0:1") && !is_user("1") && !is_user("1:-1"));
        assert_eq!(user_ids(Some("12:34"), (1, 1)), (12, 34));
        assert_eq!(user_ids(None, (1000, 1000)), (1000, 1000));
        assert_eq!(user_ids(Some("x:y"), (7, 8)), (7, 8));
    }
}
