use paperclip_sandbox_protocol::jsonrpc::{trim_line, ErrorObject, Id, Message, Response};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::runtime::result_json::{ResultJson, SPLICE_MIN};

#[tokio::test]
async fn execute_log_lines_are_the_notification_lines() {
    use paperclip_sandbox_protocol::jsonrpc::Notification;
    use paperclip_sandbox_protocol::methods::OutputStream;
    let (tx, mut rx) = tokio::io::duplex(1 << 20);
    let (sink, task) = spawn_writer(tx);
    let chunk = "a\"b\\c\n\u{1}\u{7f}é😀 ".repeat(40);
    let cases = [
        (OutputStream::Stdout, chunk.as_str(), Some("inv-\"1\"")),
        (OutputStream::Stderr, "x", None),
    ];
    let mut want = String::new();
    for (stream, chunk, inv) in cases {
        assert!(sink.send_execute_log(stream, chunk, inv));
        let note = Notification {
            method: "execute.log".into(),
            params: Some(serde_json::json!({"stream": stream, "chunk": chunk})),
            invocation: None,
            invocation_id: inv.map(str::to_owned),
        };
        want.push_str(&serde_json::to_string(&Message::from(note)).unwrap());
        want.push('\n');
    }
    drop(sink);
    task.await.unwrap().unwrap();
    let mut got = String::new();
    rx.read_to_string(&mut got).await.unwrap();
    assert_eq!(got, want);
}

async fn frames(input: &[u8], limit: usize) -> Vec<Frame> {
    let mut reader = LineReader::new(input, limit);
    let mut out = Vec::new();
    while let Some(f) = reader.next_frame().await.unwrap() {
        out.push(f);
    }
    out
}

fn line(s: &str) -> Frame {
    Frame::Line(s.to_owned())
}

#[tokio::test]
async fn splits_lines_strips_cr_and_skips_blanks() {
    let got = frames(b"a\r\n\n  \r\nb\n\r\nc", 100).await;
    assert_eq!(got, vec![line("a"), line("b"), line("c")]);
}

#[tokio::test]
async fn oversize_line_is_reported_and_the_next_line_still_read() {
    let mut input = vec![b'x'; 50];
    input.extend_from_slice(b"\nok\n");
    input.extend_from_slice(&[b'y'; 11]);
    input.extend_from_slice(b"\r\nlast\n");
    let got = frames(&input, 10).await;
    assert_eq!(
        got,
        vec![
            Frame::Oversize { limit: 10 },
            line("ok"),
            Frame::Oversize { limit: 10 },
            line("last")
        ]
    );
}

#[tokio::test]
async fn exactly_the_cap_passes_and_cr_is_not_counted() {
    let got = frames(b"0123456789\r\n01234567890\n", 10).await;
    assert_eq!(got, vec![line("0123456789"), Frame::Oversize { limit: 10 }]);
}

#[tokio::test]
async fn oversize_is_detected_without_buffering_the_line() {
    // A 1 MiB line against a 1 KiB cap: the reader stops holding bytes at the cap.
    let (mut tx, rx) = tokio::io::duplex(4096);
    let writer = tokio::spawn(async move {
        tx.write_all(&vec![b'z'; 1 << 20]).await.unwrap();
        tx.write_all(b"\n{\"after\":1}\n").await.unwrap();
    });
    let mut reader = LineReader::new(rx, 1024);
    assert_eq!(reader.next_frame().await.unwrap(), Some(Frame::Oversize { limit: 1024 }));
    assert!(reader.line.capacity() <= 64 * 1024, "pending line was not kept");
    assert_eq!(reader.next_frame().await.unwrap(), Some(line("{\"after\":1}")));
    writer.await.unwrap();
    assert_eq!(reader.next_frame().await.unwrap(), None);
}

#[tokio::test]
async fn oversize_answer_matches_d10() {
    let line = Message::from(oversize_response(DEFAULT_FRAME_LIMIT)).to_line();
    assert_eq!(
        line,
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid request: frame exceeds the 67108864-byte limit\"}}\n"
    );
}

#[tokio::test]
async fn cancelled_reads_lose_nothing() {
    let (mut tx, rx) = tokio::io::duplex(64);
    let mut reader = LineReader::new(rx, 100);
    tx.write_all(b"hel").await.unwrap();
    // The read is cancelled mid-line by a timeout; the partial line must survive.
    let r = tokio::time::timeout(std::time::Duration::from_millis(20), reader.next_frame());
    assert!(r.await.is_err());
    tx.write_all(b"lo\n").await.unwrap();
    assert_eq!(reader.next_frame().await.unwrap(), Some(line("hello")));
}

#[tokio::test]
async fn writer_batches_and_flushes() {
    let (tx, mut rx) = tokio::io::duplex(1 << 20);
    let (sink, task) = spawn_writer(tx);
    for i in 0..100u64 {
        assert!(sink.send(Response::success(i.into(), serde_json::Value::Null)));
    }
    sink.flush().await;
    drop(sink);
    task.await.unwrap().unwrap();
    let mut all = String::new();
    rx.read_to_string(&mut all).await.unwrap();
    let lines: Vec<_> = all.lines().collect();
    assert_eq!(lines.len(), 100);
    assert_eq!(lines[7], "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":null}");
}

#[tokio::test]
async fn lent_frames_match_owned_frames() {
    let input = b"a\r\n\n  \r\nb\xff\nccc";
    let mut owned = LineReader::new(&input[..], 100);
    let mut lent = LineReader::new(&input[..], 100);
    while let Some(frame) = owned.next_frame().await.unwrap() {
        let got = lent.next_frame_ref().await.unwrap().map(FrameRef::into_owned);
        assert_eq!(got, Some(frame));
    }
    assert_eq!(lent.next_frame_ref().await.unwrap(), None);
}

#[tokio::test]
async fn raw_answers_are_the_lines_of_response_messages() {
    let (tx, mut rx) = tokio::io::duplex(1 << 20);
    let (sink, task) = spawn_writer(tx);
    let small: Box<serde_json::value::RawValue> = serde_json::from_str(r#"{"a":[1,"x"]}"#).unwrap();
    // Queued without a copy, between the frames around it.
    let large = serde_json::value::to_raw_value(&"x\"y".repeat(SPLICE_MIN)).unwrap();
    let error = ErrorObject::method_not_found("nope").with_data(serde_json::json!({"k": 1}));
    let ids = [Id::from(7u64), Id::from("host-1"), Id::from(-3i64)];
    let mut want = String::new();
    for (id, result) in ids.iter().zip([&small, &large, &small]) {
        assert!(sink.send_result(id, result.clone().into()));
        assert!(sink.send_error(Some(id), &error));
        let value: serde_json::Value = serde_json::from_str(result.get()).unwrap();
        want += &Message::from(Response::success(id.clone(), value)).to_line();
        want += &Message::from(Response::error(Some(id.clone()), error.clone())).to_line();
    }
    assert!(sink.send_error(None, &error));
    want += &Message::from(Response::error(None, error.clone())).to_line();
    drop(sink);
    task.await.unwrap().unwrap();
    let mut all = String::new();
    rx.read_to_string(&mut all).await.unwrap();
    assert_eq!(all, want);
}

#[tokio::test]
async fn an_execute_result_in_parts_is_the_line_of_its_response() {
    use paperclip_sandbox_protocol::methods::ExecuteResult;
    let (tx, mut rx) = tokio::io::duplex(1 << 20);
    let (sink, task) = spawn_writer(tx);
    let run = "a".repeat(SPLICE_MIN + 1);
    let result = ExecuteResult::exited(0)
        .with_stdout(format!("{run}\n\"{run}"))
        .with_stderr(format!("é\t{run}"));
    let parts = ResultJson::execute(result.clone()).unwrap();
    assert!(parts.parts().len() > 3, "the long runs are parts of their own");
    let id = Id::from(9u64);
    assert!(sink.send_result(&id, parts));
    assert!(sink.send_error(Some(&id), &ErrorObject::method_not_found("after")));
    drop(sink);
    task.await.unwrap().unwrap();
    let value = serde_json::to_value(&result).unwrap();
    let mut want = Message::from(Response::success(id.clone(), value)).to_line();
    let error = ErrorObject::method_not_found("after");
    want += &Message::from(Response::error(Some(id), error)).to_line();
    let mut all = String::new();
    rx.read_to_string(&mut all).await.unwrap();
    assert_eq!(all, want);
}

#[tokio::test]
async fn a_frame_that_fails_to_serialize_leaves_nothing_behind() {
    struct Broken;
    impl Serialize for Broken {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::{Error, SerializeMap};
            let mut map = s.serialize_map(None)?;
            map.serialize_entry("half", &1)?;
            Err(S::Error::custom("broken"))
        }
    }
    let (tx, mut rx) = tokio::io::duplex(1 << 20);
    let (sink, task) = spawn_writer(tx);
    assert!(!sink.append(|buf| serde_json::to_writer(buf, &Broken)));
    assert!(sink.send_line("{\"ok\":1}\n".to_owned()));
    drop(sink);
    task.await.unwrap().unwrap();
    let mut all = String::new();
    rx.read_to_string(&mut all).await.unwrap();
    assert_eq!(all, "{\"ok\":1}\n");
}

proptest::proptest! {
    #[test]
    fn chunking_does_not_change_lines(
        lines in proptest::collection::vec("[a-z{}\":,\r ]{0,40}", 0..20),
        cuts in proptest::collection::vec(0usize..2000, 0..10),
    ) {
        let input = lines.join("\n").into_bytes();
        let expected = tokio_test_block(frames(&input, 1000));
        // The same bytes delivered in arbitrary chunks through a pipe.
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (input.len() + 1)).collect();
        cuts.sort_unstable();
        let got = tokio_test_block(async move {
            let (mut tx, rx) = tokio::io::duplex(16);
            let feeder = tokio::spawn(async move {
                let mut start = 0;
                for cut in cuts.into_iter().chain([input.len()]) {
                    tx.write_all(&input[start..cut.max(start)]).await.unwrap();
                    tx.flush().await.unwrap();
                    start = cut.max(start);
                }
            });
            let mut reader = LineReader::new(rx, 1000);
            let mut out = Vec::new();
            while let Some(f) = reader.next_frame().await.unwrap() {
                out.push(f);
            }
            feeder.await.unwrap();
            out
        });
        proptest::prop_assert_eq!(&got, &expected);
        let want: Vec<Frame> = lines
            .iter()
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .filter(|l| !trim_line(l).is_empty())
            .map(line)
            .collect();
        proptest::prop_assert_eq!(got, want);
    }
}

fn tokio_test_block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

#[tokio::test]
async fn no_frame_over_the_line_limit_leaves_and_the_writer_keeps_serving() {
    use paperclip_sandbox_protocol::methods::{ExecuteResult, OutputStream};
    let limit = 4096;
    let (tx, mut rx) = tokio::io::duplex(1 << 20);
    let (sink, task) = writer::spawn_writer_with_limit(tx, limit);
    // 3,000 control bytes are 18,000 units encoded: over the limit, answered by an error.
    let big = ExecuteResult::exited(0).with_stdout("\u{1}".repeat(3000));
    assert!(sink.send_result(&Id::from(1u64), ResultJson::execute(big).unwrap()));
    // 2,000 '€' are 6,000 bytes but 2,000 units: under the limit, sent as they are.
    let euros = ExecuteResult::exited(0).with_stdout("€".repeat(2000));
    assert!(sink.send_result(&Id::from(2u64), ResultJson::execute(euros).unwrap()));
    assert!(!sink.send_execute_log(OutputStream::Stdout, &"\u{1}".repeat(1000), None));
    assert!(sink.send_execute_log(OutputStream::Stdout, "small", None));
    assert!(sink.send_result_json(&Id::from(3u64), &format!("\"{}\"", "x".repeat(limit))));
    drop(sink);
    task.await.unwrap().unwrap();
    let mut all = String::new();
    rx.read_to_string(&mut all).await.unwrap();
    let lines: Vec<serde_json::Value> =
        all.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(all.lines().all(|l| l.encode_utf16().count() <= limit), "{all}");
    assert_eq!(lines.len(), 4, "{all}");
    assert_eq!(lines[0]["id"], 1);
    assert_eq!(lines[0]["error"]["code"], -32603);
    let message = lines[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("line limit") && !message.contains('\u{1}'), "{message}");
    assert_eq!(lines[1]["result"]["stdout"].as_str().unwrap().chars().count(), 2000);
    assert_eq!(lines[2]["params"]["chunk"], "small");
    assert_eq!(lines[3]["id"], 3);
    assert_eq!(lines[3]["error"]["code"], -32603);
}
