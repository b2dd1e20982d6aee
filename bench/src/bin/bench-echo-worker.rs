//! The practical limit of the pipe: a minimal serde_json line loop. It reads a line, parses
//! it, and answers every request (a frame with a `method` and an `id`) with
//! `{"jsonrpc":"2.0","id":<id>,"result":null}`; notifications are ignored. Output is buffered
//! and flushed whenever no further input is already buffered, so a pipelined batch costs one
//! write. It exits 0 at stdin EOF.

use std::io::{self, BufRead, BufReader, BufWriter, Write};

use serde_json::Value;

fn main() -> io::Result<()> {
    // Our own buffer (std's stdin lock does not expose its buffer): a large read bypasses
    // std's internal one.
    let mut input = BufReader::with_capacity(64 * 1024, io::stdin().lock());
    let mut out = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    let mut line = Vec::with_capacity(1024);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let id = match serde_json::from_slice::<Value>(&line) {
            Ok(Value::Object(mut frame)) if frame.contains_key("method") => frame.remove("id"),
            _ => None,
        };
        if let Some(id) = id {
            out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":")?;
            serde_json::to_writer(&mut out, &id)?;
            out.write_all(b",\"result\":null}\n")?;
        }
        if input.buffer().is_empty() {
            out.flush()?;
        }
    }
    out.flush()
}
