//! Replays the kept fuzz corpus (`fuzz/corpus/`) through the fuzz targets' bodies, on stable
//! Rust: every input that ever mattered keeps passing.

use std::path::Path;

use paperclip_sandbox_sdk::testing::fuzz::{serve_bytes, validate_manifest_bytes};

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the corpus {} is kept in the repository: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "empty corpus {}", dir.display());
    out
}

#[test]
fn frame_dispatch_corpus_passes() {
    for (name, input) in corpus("frame_dispatch") {
        let lines = serve_bytes(&input);
        if name.ends_with("seed-02") {
            assert!(lines[0].contains(r#""id":"a\ud800b""#), "{name}: {lines:?}");
        }
    }
}

#[test]
fn manifest_validate_corpus_passes() {
    for (_, input) in corpus("manifest_validate") {
        validate_manifest_bytes(&input);
    }
}

/// A small deterministic mutator (xorshift), so the bounded run below is the same on every
/// machine: byte flips, deletions, insertions of tokens that matter to the parsers, and
/// splices of two corpus entries.
struct Mutator(u64);

impl Mutator {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn mutate(&mut self, corpus: &[(String, Vec<u8>)]) -> Vec<u8> {
        const TOKENS: &[&[u8]] = &[
            b"\"",
            b"\\",
            b"\\ud800",
            b"\\udc00",
            b"{",
            b"}",
            b"[",
            b"]",
            b"\n",
            b"\r\n",
            b",",
            b":",
            b"null",
            b"-1",
            b"1e400",
            b"\"id\":",
            b"\"method\":\"environmentExecute\"",
            b"\"params\":",
            b"\xff",
            b"\x00",
        ];
        let mut data = corpus[self.below(corpus.len())].1.clone();
        for _ in 0..1 + self.below(4) {
            let at = self.below(data.len() + 1);
            match self.below(4) {
                0 if !data.is_empty() => {
                    let i = self.below(data.len());
                    data[i] ^= 1 << self.below(8);
                }
                1 if !data.is_empty() => {
                    let end = (at + self.below(16)).min(data.len());
                    data.drain(at.min(end)..end);
                }
                2 => {
                    let token = TOKENS[self.below(TOKENS.len())];
                    data.splice(at..at, token.iter().copied());
                }
                _ => {
                    let other = &corpus[self.below(corpus.len())].1;
                    let from = self.below(other.len() + 1);
                    data.truncate(at);
                    data.extend_from_slice(&other[from..]);
                }
            }
        }
        data
    }
}

/// Mutated inputs run per target (`FUZZ_ITERATIONS`, default 2,000): a bounded fuzz run on
/// stable Rust in every `cargo test`; `cargo fuzz` goes further (`fuzz/README.md`).
fn iterations() -> usize {
    std::env::var("FUZZ_ITERATIONS").ok().and_then(|s| s.parse().ok()).unwrap_or(2_000)
}

#[test]
fn bounded_mutation_run_of_frame_dispatch() {
    let corpus = corpus("frame_dispatch");
    let mut m = Mutator(0x9E37_79B9_7F4A_7C15);
    for _ in 0..iterations() {
        serve_bytes(&m.mutate(&corpus));
    }
}

#[test]
fn bounded_mutation_run_of_manifest_validate() {
    let corpus = corpus("manifest_validate");
    let mut m = Mutator(0xD1B5_4A32_D192_ED03);
    for _ in 0..iterations() * 5 {
        validate_manifest_bytes(&m.mutate(&corpus));
    }
}
