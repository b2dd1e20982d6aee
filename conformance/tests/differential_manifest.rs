//! Differential test: our manifest validator (profile paperclip-2026-09) against the published
//! host validator (`pluginManifestV1Schema` of npm `@paperclipai/shared` 2026.916.1, run by
//! `interop/shared-validator/validate.mjs`), on every manifest vector and on seeded variants
//! of the base manifest. Verdicts, issue paths, codes and messages must all agree.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};

use paperclip_sandbox_protocol::manifest::{code, validate};
use paperclip_sandbox_protocol::HostProfile;
use serde_json::{json, Map, Value};

const VARIANTS: usize = 1500;

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/shared-validator")
}

/// A small deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    /// Fewer than `below` picks from `items` (repeats allowed).
    fn picks<T: Copy>(&mut self, items: &[T], below: usize) -> Vec<T> {
        let n = self.below(below);
        (0..n).map(|_| *self.pick(items)).collect()
    }
}

fn apply_patch(doc: &mut Value, patch: &[Value]) {
    for op in patch {
        let path: Vec<String> = op["path"].as_str().unwrap()[1..]
            .split('/')
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect();
        let (last, parents) = path.split_last().unwrap();
        let mut target = &mut *doc;
        for t in parents {
            target = match target {
                Value::Array(a) => &mut a[t.parse::<usize>().unwrap()],
                other => other.get_mut(t.as_str()).unwrap(),
            };
        }
        match (op["op"].as_str().unwrap(), target) {
            ("add" | "replace", Value::Object(m)) => {
                m.insert(last.clone(), op["value"].clone());
            }
            ("add", Value::Array(a)) => a.insert(last.parse().unwrap(), op["value"].clone()),
            ("replace", Value::Array(a)) => a[last.parse::<usize>().unwrap()] = op["value"].clone(),
            ("remove", Value::Object(m)) => {
                m.shift_remove(last.as_str());
            }
            ("remove", Value::Array(a)) => {
                a.remove(last.parse::<usize>().unwrap());
            }
            (op, _) => panic!("unsupported op {op}"),
        }
    }
}

/// A string of `n` code points: ASCII, surrogate pairs (emoji) or a mix.
fn sized(rng: &mut Rng, n: usize) -> String {
    match rng.below(3) {
        0 => "a".repeat(n),
        1 => "\u{1F600}".repeat(n),
        _ => (0..n).map(|i| if i % 2 == 0 { 'x' } else { '\u{10437}' }).collect(),
    }
}

fn garbage(rng: &mut Rng, depth: usize) -> Value {
    let choice = if depth == 0 { rng.below(6) } else { rng.below(9) };
    match choice {
        0 => Value::Null,
        1 => json!(rng.chance(50)),
        2 => json!(*rng.pick(&[0.0, 1.0, -1.0, 1.5, 2.0, 100.0, 1e21, -0.5])),
        3 => json!(*rng.pick(&[
            "",
            "x",
            "automation",
            "rust-sbx",
            "Rust",
            "object",
            "1.0.0",
            "provider"
        ])),
        4 => json!(rng.below(1000)),
        5 => {
            let n = rng.below(4);
            json!(sized(rng, n))
        }
        6 => Value::Array((0..rng.below(4)).map(|_| garbage(rng, depth - 1)).collect()),
        7 => json!({"length": garbage(rng, 0)}),
        _ => {
            let keys = ["type", "a", "0", "__proto__", "properties", "$ref", "driverKey", "length"];
            let mut m = Map::new();
            for _ in 0..rng.below(4) {
                m.insert((*rng.pick(&keys)).into(), garbage(rng, depth - 1));
            }
            Value::Object(m)
        }
    }
}

const TRICKY_KEYS: &[&str] = &[
    "", "a", "Rust", "rust sbx", "-x", ".x", "_x", "x.y_z-1", "0", "9abc", "abc\n", "é", "a/b",
    "ab#", "UPPER", "lower",
];
const CONFIG_SCHEMAS: &[&str] = &[
    "{}",
    r#"{"type":"object"}"#,
    r#"{"type":1}"#,
    r#"{"type":null}"#,
    r#"{"properties":{}}"#,
    r#"{"$ref":null}"#,
    r#"{"oneOf":[]}"#,
    r#"{"anyOf":1}"#,
    r#"{"allOf":{}}"#,
    "[]",
    "null",
    "\"object\"",
    "1",
    r#"{"__proto__":{"type":"object"}}"#,
    r#"{"__proto__":1,"properties":{}}"#,
    r#"{"0":1}"#,
];
/// The keys the mutations pick from: the published schema's own (`validate.mjs --keys`, so
/// that this test copies none of them) plus keys it does not know. Top-level sections whose
/// contents our validator leaves to the host (it warns `not_checked` about them) are left out:
/// their inner shapes would disagree by design.
struct Keys {
    top: Vec<String>,
    driver: Vec<String>,
    caps: Vec<String>,
}

impl Keys {
    fn published(dir: &Path, base: &Value) -> Keys {
        let keys = support::published_keys(dir);
        let checked = |key: &str| {
            let mut m = base.clone();
            m[key] = json!([]);
            let report = validate(&m, HostProfile::Paperclip2026_09);
            !report.warnings.iter().any(|w| w.code == code::NOT_CHECKED && w.path == key)
        };
        let with = |list: &str, extra: &[&str]| -> Vec<String> {
            let published = keys[list].as_array().expect("a key list");
            assert!(!published.is_empty(), "the published schema names {list} keys");
            let names = published.iter().map(|k| k.as_str().expect("a key").to_owned());
            names.chain(extra.iter().map(|k| (*k).to_owned())).collect()
        };
        let mut top = with("top", &["somethingNew", "__proto__"]);
        top.retain(|k| checked(k));
        Keys {
            top,
            // The newer contracts' fields and a near-miss alias.
            driver: with(
                "driver",
                &["defaultAcquireTimeoutMs", "creationOperationVersion", "supportsLoginPTY"],
            ),
            caps: with("capabilities", &["concurrentSyncAndExec", "fooBar", "__proto__", "7"]),
        }
    }
}

fn obj(m: &mut Value) -> &mut Map<String, Value> {
    m.as_object_mut().unwrap()
}

fn driver_mut<'a>(m: &'a mut Value, rng: &mut Rng) -> Option<&'a mut Map<String, Value>> {
    let drivers = m.get_mut("environmentDrivers")?.as_array_mut()?;
    if drivers.is_empty() {
        return None;
    }
    let i = rng.below(drivers.len());
    drivers[i].as_object_mut()
}

fn binding(rng: &mut Rng) -> Value {
    let fields = ["image", "provider", "", "1bad", "snapshot_id", "a-b", "image"];
    let field = json!(*rng.pick(&fields));
    match rng.below(6) {
        0 => json!({"field": field}),
        1 => {
            json!({"field": field, "unsetFields": [*rng.pick(&fields), *rng.pick(&fields), *rng.pick(&fields)]})
        }
        2 => {
            json!({"field": "image", "unsetFields": (0..19 + rng.below(4)).map(|i| format!("f{i}")).collect::<Vec<_>>()})
        }
        3 => json!({"field": field, "extra": 1}),
        4 => json!({"unsetFields": ["a"]}),
        _ => {
            let n = 99 + rng.below(3);
            json!({"field": sized(rng, n)})
        }
    }
}

fn mutate(m: &mut Value, rng: &mut Rng, keys: &Keys) {
    match rng.below(20) {
        0 => {
            obj(m).shift_remove(rng.pick(&keys.top).as_str());
        }
        1 => {
            obj(m).insert(rng.pick(&keys.top).clone(), garbage(rng, 3));
        }
        2 => {
            let (key, max) =
                *rng.pick(&[("displayName", 100), ("description", 500), ("author", 200)]);
            let n = [0, max - 1, max, max + 1][rng.below(4)];
            obj(m).insert(key.into(), json!(sized(rng, n)));
        }
        3 => {
            obj(m).insert("id".into(), json!(*rng.pick(TRICKY_KEYS)));
        }
        4 => {
            let versions =
                ["1.0.0", "0.1.0-beta.1", "1.0", "v1.0.0", "1.0.0-", "1.0.0+build.1", "", "2.0.0"];
            let key = *rng.pick(&["version", "minimumHostVersion", "minimumPaperclipVersion"]);
            obj(m).insert(key.into(), json!(*rng.pick(&versions)));
        }
        5 => {
            let cats = ["automation", "ui", "connector", "workspace", "other", ""];
            obj(m).insert("categories".into(), json!(rng.picks(&cats, 3)));
        }
        6 => {
            let caps = [
                "environment.drivers.register",
                "http.outbound",
                "jobs.schedule",
                "agent.tools.register",
                "nope",
            ];
            obj(m).insert("capabilities".into(), json!(rng.picks(&caps, 3)));
        }
        7 => {
            let e = [
                json!({"worker": ""}),
                json!({}),
                json!({"worker": "w", "ui": ""}),
                json!({"worker": "w", "ui": 1, "x": 2}),
                json!([]),
            ];
            obj(m).insert("entrypoints".into(), rng.pick(&e).clone());
        }
        8 => {
            if let Some(Value::Array(drivers)) = obj(m).get_mut("environmentDrivers") {
                if let Some(first) = drivers.first().cloned() {
                    let mut copy = first;
                    if rng.chance(40) {
                        copy["driverKey"] = json!(*rng.pick(TRICKY_KEYS));
                    }
                    drivers.push(copy);
                }
            }
        }
        9 => {
            if let Some(d) = driver_mut(m, rng) {
                d.shift_remove(rng.pick(&keys.driver).as_str());
            }
        }
        10 => {
            if let Some(d) = driver_mut(m, rng) {
                d.insert(rng.pick(&keys.driver).clone(), garbage(rng, 3));
            }
        }
        11 => {
            if let Some(d) = driver_mut(m, rng) {
                let mut caps = Map::new();
                for _ in 0..rng.below(4) {
                    let v = if rng.chance(85) { json!(rng.chance(50)) } else { garbage(rng, 1) };
                    caps.insert(rng.pick(&keys.caps).clone(), v);
                }
                d.insert("sandboxCapabilities".into(), Value::Object(caps));
            }
        }
        12 => {
            if let Some(d) = driver_mut(m, rng) {
                d.insert("driverKey".into(), json!(*rng.pick(TRICKY_KEYS)));
            }
        }
        13 => {
            let text = *rng.pick(CONFIG_SCHEMAS);
            let schema: Value = serde_json::from_str(text).unwrap();
            if rng.chance(25) {
                obj(m).insert("instanceConfigSchema".into(), schema);
            } else if let Some(d) = driver_mut(m, rng) {
                d.insert("configSchema".into(), schema);
            }
        }
        14 => {
            let b = binding(rng);
            if let Some(d) = driver_mut(m, rng) {
                d.insert("templateConfigBinding".into(), b);
            }
        }
        15 => {
            let key = *rng.pick(&["defaultAcquireTimeoutMs", "creationOperationVersion"]);
            let v = json!(*rng.pick(&[1, 300000, 0, 2]));
            if let Some(d) = driver_mut(m, rng) {
                d.insert(key.into(), v);
            }
        }
        16 => {
            let (key, count_max, item_max) = *rng.pick(&[
                ("interactiveSetupConnectionTypes", 10, 100),
                ("templateIdentityPaths", 20, 200),
            ]);
            let count = count_max - 1 + rng.below(3);
            let items: Vec<Value> = (0..count)
                .map(|_| {
                    let n = *rng.pick(&[0, 1, item_max - 1, item_max, item_max + 1]);
                    json!(sized(rng, n))
                })
                .collect();
            if let Some(d) = driver_mut(m, rng) {
                d.insert(key.into(), Value::Array(items));
            }
        }
        17 => {
            let vals = [json!(true), json!(false), json!("true")];
            let (a, b) = (rng.pick(&vals).clone(), rng.pick(&vals).clone());
            let (with_a, with_b) = (rng.chance(70), rng.chance(70));
            if let Some(d) = driver_mut(m, rng) {
                if with_a {
                    d.insert("supportsLoginPty".into(), a);
                }
                if with_b {
                    d.insert("supportsSetupTokenLogin".into(), b);
                }
            }
        }
        18 => {
            let (key, max) =
                *rng.pick(&[("displayName", 100), ("description", 500), ("templateRefKind", 100)]);
            let n = [0, max - 1, max, max + 1][rng.below(4)];
            let s = sized(rng, n);
            if let Some(d) = driver_mut(m, rng) {
                d.insert(key.into(), json!(s));
            }
        }
        _ => {
            let extras = [
                ("jobs", json!([{"jobKey": "j", "displayName": "J", "schedule": "*/15 * * * *"}])),
                (
                    "jobs",
                    json!([{"jobKey": "j", "displayName": "J", "schedule": "bad"}, {"jobKey": "j", "displayName": ""}]),
                ),
                (
                    "webhooks",
                    json!([{"endpointKey": "w", "displayName": "W"}, {"endpointKey": "w", "displayName": "W", "x": 1}]),
                ),
                (
                    "tools",
                    json!([{"name": "t", "displayName": "T", "description": "d", "parametersSchema": {}}]),
                ),
                (
                    "tools",
                    json!([{"name": "t", "displayName": "T", "description": "", "parametersSchema": {"properties": {}}}]),
                ),
                ("ui", json!({"slots": []})),
                ("environmentDrivers", json!([])),
                ("environmentDrivers", json!({})),
                ("kind", json!(null)),
            ];
            let (key, v) = rng.pick(&extras).clone();
            if key == "kind" {
                if let Some(d) = driver_mut(m, rng) {
                    let kinds = [
                        json!("sandbox_provider"),
                        json!("environment_driver"),
                        json!("sandbox"),
                        json!(null),
                    ];
                    d.insert("kind".into(), rng.pick(&kinds).clone());
                }
            } else {
                obj(m).insert(key.into(), v);
            }
        }
    }
}

fn our_verdict(manifest: &Value) -> Value {
    let report = validate(manifest, HostProfile::Paperclip2026_09);
    json!({
        "valid": report.valid,
        "paths": report.errors.iter().map(|e| e.path.clone()).collect::<Vec<_>>(),
        "codes": report.errors.iter().map(|e| e.code.clone()).collect::<Vec<_>>(),
        "messages": report.errors.iter().map(|e| e.message.clone()).collect::<Vec<_>>(),
    })
}

#[test]
fn our_validator_agrees_with_the_published_host_validator() {
    if !support::node_available() {
        eprintln!("differential: skipped, `node` is not on PATH");
        return;
    }
    let dir = interop_dir();
    support::ensure_npm_project(&dir, "@paperclipai/shared");

    let vectors: Value =
        serde_json::from_str(include_str!("../../protocol/tests/vectors/manifest-validation.json"))
            .unwrap();
    let base = vectors["baseManifest"].clone();
    let keys = Keys::published(&dir, &base);
    let mut manifests = Vec::new();
    for case in vectors["cases"].as_array().unwrap() {
        let mut m = base.clone();
        apply_patch(&mut m, case["input"]["patch"].as_array().unwrap());
        manifests.push(m);
    }
    let mut rng = Rng(0x5EED_CAFE_F00D_0001);
    for _ in 0..VARIANTS {
        let mut m = base.clone();
        for _ in 0..1 + rng.below(3) {
            mutate(&mut m, &mut rng, &keys);
        }
        manifests.push(m);
    }
    manifests.push(json!([]));
    manifests.push(json!(null));
    manifests.push(json!({}));

    let input: String = manifests.iter().map(|m| format!("{m}\n")).collect();
    let lines = support::published_verdicts(&dir, &input);
    assert_eq!(lines.len(), manifests.len(), "one verdict per manifest");

    let mut verdict_disagreements = 0;
    let mut detail_disagreements = 0;
    let mut invalid = 0;
    for (m, theirs) in manifests.iter().zip(&lines) {
        let ours = our_verdict(m);
        if theirs["valid"] == false {
            invalid += 1;
        }
        if ours["valid"] != theirs["valid"] {
            verdict_disagreements += 1;
            eprintln!(
                "VERDICT DISAGREEMENT\n  manifest: {m}\n  ours:   {ours}\n  theirs: {theirs}"
            );
        } else if ours != *theirs {
            detail_disagreements += 1;
            eprintln!("ISSUE DISAGREEMENT\n  manifest: {m}\n  ours:   {ours}\n  theirs: {theirs}");
        }
    }
    // Written to the real stderr (not the test harness's captured output), so that the count
    // shows in every `cargo test` and CI log.

    let _ = writeln!(
        std::io::stderr(),
        "differential: {} manifests ({invalid} invalid), {verdict_disagreements} disagreements ({detail_disagreements} in issue paths/codes/messages)",
        manifests.len()
    );
    assert!(
        invalid > manifests.len() / 4 && invalid < manifests.len(),
        "the generator covers both verdicts"
    );
    assert_eq!(verdict_disagreements, 0);
    assert_eq!(detail_disagreements, 0);
}
