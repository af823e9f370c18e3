//! JSON-RPC messages the MCP library would not answer, answered.
//!
//! rmcp skips a stdio line that is not JSON without a word (its own
//! choice, and a tested one), and drops a line over its length limit with
//! only a log line; over HTTP it answers a body that is not a JSON-RPC
//! message with `415 Unsupported Media Type`, which blames the content type
//! of a body that was JSON all along. A client that sent a damaged line
//! waits for an answer that never comes, and one told 415 looks for the
//! fault in its headers. A request whose params rmcp cannot read is
//! answered "method not found", or "invalid request" without its id. JSON-RPC
//! 2.0 has an answer for each: `-32700` (parse error) for what is not JSON,
//! `-32600` (invalid request) for JSON that is not a message, `-32602`
//! (invalid params) for params that do not fit, with the request's `id`
//! where one can be read and `null` where not.
//!
//! [`gate`] stands between a byte stream and rmcp: whole lines that are
//! messages pass through untouched, the rest are answered here and logged.
//! [`reject`] is the check both it and the HTTP transport
//! (`serve::http`) make.

use rmcp::model::ErrorCode;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Longest stdio line accepted, in bytes (the HTTP transport's body limit is
/// `HttpOptions::max_body_bytes`, 1 MiB by default too). A tool's arguments
/// are a few hundred bytes; past this a line is answered, not buffered.
pub const MAX_LINE_BYTES: usize = 1 << 20;

// JSON-RPC 2.0's codes, as rmcp names them.
const PARSE_ERROR: ErrorCode = ErrorCode::PARSE_ERROR;
const INVALID_REQUEST: ErrorCode = ErrorCode::INVALID_REQUEST;
const INVALID_PARAMS: ErrorCode = ErrorCode::INVALID_PARAMS;

/// The error response for `bytes` when they are not one JSON-RPC 2.0
/// message (a request, a notification, or a response to the server);
/// `None` when they are, and rmcp takes them from there.
pub fn reject(bytes: &[u8]) -> Option<Value> {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => return Some(response(PARSE_ERROR, format!("parse error: {e}"), None)),
    };
    let Value::Object(msg) = &value else {
        let what = match &value {
            Value::Array(_) => "an array (batches are not part of MCP since 2025-06-18)",
            Value::String(_) => "a string",
            Value::Number(_) => "a number",
            Value::Bool(_) => "a boolean",
            _ => "null",
        };
        return Some(response(
            INVALID_REQUEST,
            format!("invalid request: a JSON-RPC message is an object, got {what}"),
            None,
        ));
    };
    // An id the client can match, where the message has one that is valid.
    let id = msg
        .get("id")
        .filter(|v| v.is_string() || v.is_i64() || v.is_u64())
        .cloned();
    if msg.get("jsonrpc") != Some(&json!("2.0")) {
        return Some(response(
            INVALID_REQUEST,
            "invalid request: \"jsonrpc\" must be \"2.0\"".to_string(),
            id,
        ));
    }
    let request = msg.get("method").is_some_and(Value::is_string);
    let reply = id.is_some() && (msg.contains_key("result") || msg.contains_key("error"));
    if !request && !reply {
        return Some(response(
            INVALID_REQUEST,
            "invalid request: a message names a \"method\" (a string), or answers an \"id\" with \"result\" or \"error\"".to_string(),
            id,
        ));
    }
    // A request's params rmcp cannot read: it answers "method not found"
    // naming the method, or an invalid request without the id, which leaves
    // the client waiting for it. Notifications get no answer either way.
    if let (true, Some(id)) = (request, id) {
        if let Some(why) = params_problem(msg) {
            return Some(response(
                INVALID_PARAMS,
                format!("invalid params: {why}"),
                Some(id),
            ));
        }
    }
    None
}

/// What is wrong with a request's `params`, for the methods whose params
/// MCP fixes and this server answers; `None` when nothing is.
fn params_problem(msg: &serde_json::Map<String, Value>) -> Option<String> {
    let params = match msg.get("params") {
        None => None,
        Some(Value::Object(p)) => Some(p),
        Some(_) => return Some("\"params\" must be an object".into()),
    };
    let field = |name: &str| params.and_then(|p| p.get(name));
    let need = |name: &str, ok: fn(&Value) -> bool, what: &str| -> Option<String> {
        match field(name) {
            Some(v) if ok(v) => None,
            Some(_) => Some(format!("params.{name} must be {what}")),
            None => Some(format!("params.{name} is required ({what})")),
        }
    };
    match msg.get("method").and_then(Value::as_str) {
        Some("tools/call") => need("name", Value::is_string, "a tool's name").or_else(|| {
            field("arguments")
                .filter(|a| !a.is_object() && !a.is_null())
                .map(|_| "params.arguments must be an object".to_string())
        }),
        Some("initialize") => need("protocolVersion", Value::is_string, "a string")
            .or_else(|| need("capabilities", Value::is_object, "an object"))
            .or_else(|| {
                need(
                    "clientInfo",
                    Value::is_object,
                    "an object with name and version",
                )
            }),
        _ => None,
    }
}

/// A JSON-RPC error response.
fn response(code: ErrorCode, message: String, id: Option<Value>) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": {"code": code.0, "message": message},
    })
}

/// Put the check of [`reject`] between a client's byte streams and the
/// server: returns the reader and writer to give rmcp, and the task that
/// writes both rmcp's lines and the answers made here to `writer`, whole
/// lines each. The task ends once rmcp has closed its writer and the
/// client its reader; await it so that every answer is written.
pub fn gate<R, W>(reader: R, writer: W) -> (DuplexStream, DuplexStream, JoinHandle<()>)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (to_server, server_reads) = tokio::io::duplex(64 * 1024);
    let (server_writes, from_server) = tokio::io::duplex(64 * 1024);
    let (answers, answered) = mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(read_lines(reader, to_server, answers));
    let out = tokio::spawn(write_lines(from_server, answered, writer));
    (server_reads, server_writes, out)
}

/// The client's lines: messages on to the server, answers for the rest to
/// the writer.
async fn read_lines<R: AsyncRead + Unpin>(
    reader: R,
    mut server: DuplexStream,
    answers: mpsc::UnboundedSender<Vec<u8>>,
) {
    let mut reader = BufReader::new(reader);
    let mut line: Vec<u8> = Vec::new();
    // Bytes of the current line seen; past the limit they are dropped.
    let mut seen = 0usize;
    loop {
        let buf = match reader.fill_buf().await {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!("stdio: reading the client's stream failed: {e}");
                break;
            }
        };
        if buf.is_empty() {
            // The client hung up; a last line without its newline still counts.
            if seen > 0 && !pass(&line, seen, &mut server, &answers).await {
                return;
            }
            break;
        }
        let (chunk, ends) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        seen += chunk.len();
        let used = ends.unwrap_or(buf.len());
        reader.consume(used);
        if ends.is_some() {
            if !pass(&line, seen, &mut server, &answers).await {
                return;
            }
            line.clear();
            seen = 0;
        }
    }
    let _ = server.shutdown().await;
}

/// One whole line of `seen` bytes (`line` holds at most [`MAX_LINE_BYTES`]
/// of them): on to the server, or answered. False once the server is gone.
async fn pass(
    line: &[u8],
    seen: usize,
    server: &mut DuplexStream,
    answers: &mpsc::UnboundedSender<Vec<u8>>,
) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) && seen <= MAX_LINE_BYTES {
        return true;
    }
    let answer = if seen > MAX_LINE_BYTES {
        Some(response(
            INVALID_REQUEST,
            format!(
                "invalid request: a message of {seen} bytes; at most {MAX_LINE_BYTES} are read"
            ),
            None,
        ))
    } else {
        reject(line)
    };
    match answer {
        Some(a) => {
            tracing::warn!(
                "stdio: answered a line that is not a JSON-RPC message: {}",
                a["error"]["message"]
            );
            let mut bytes = a.to_string().into_bytes();
            bytes.push(b'\n');
            answers.send(bytes).is_ok()
        }
        None => {
            let sent =
                server.write_all(line).await.is_ok() && server.write_all(b"\n").await.is_ok();
            sent && server.flush().await.is_ok()
        }
    }
}

/// rmcp's lines and the answers made here, each written whole.
async fn write_lines<W: AsyncWrite + Unpin>(
    from_server: DuplexStream,
    mut answered: mpsc::UnboundedReceiver<Vec<u8>>,
    mut writer: W,
) {
    let mut server = BufReader::with_capacity(64 * 1024, from_server);
    let mut line = Vec::new();
    let (mut server_open, mut answers_open) = (true, true);
    while server_open || answers_open {
        let bytes = tokio::select! {
            read = server.read_until(b'\n', &mut line), if server_open => match read {
                Ok(0) | Err(_) => {
                    server_open = false;
                    // rmcp is done: the client will not be answered any more.
                    answered.close();
                    if line.is_empty() { continue; }
                    std::mem::take(&mut line)
                }
                Ok(_) if line.ends_with(b"\n") => std::mem::take(&mut line),
                Ok(_) => continue,
            },
            answer = answered.recv(), if answers_open => match answer {
                Some(a) => a,
                None => {
                    answers_open = false;
                    continue;
                }
            },
        };
        if writer.write_all(&bytes).await.is_err() || writer.flush().await.is_err() {
            // The client is gone; dropping the stream tells rmcp.
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_pass_and_the_rest_are_answered() {
        for ok in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":"a","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"search_docs"}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"cursor":5}}"#,
            // A notification gets no answer, even with params it cannot use.
            r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":[1]}"#,
        ] {
            assert_eq!(reject(ok.as_bytes()), None, "{ok}");
        }
        let cases: &[(&str, ErrorCode, Value)] = &[
            ("garbage", PARSE_ERROR, Value::Null),
            (
                r#"{"jsonrpc":"2.0","id":9,"method":"#,
                PARSE_ERROR,
                Value::Null,
            ),
            ("[]", INVALID_REQUEST, Value::Null),
            ("3", INVALID_REQUEST, Value::Null),
            (
                r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#,
                INVALID_REQUEST,
                json!(7),
            ),
            (r#"{"jsonrpc":"2.0","id":"x"}"#, INVALID_REQUEST, json!("x")),
            (
                r#"{"jsonrpc":"2.0","id":[1],"method":5}"#,
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":8,"method":"ping","params":[1]}"#,
                INVALID_PARAMS,
                json!(8),
            ),
            (
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}"#,
                INVALID_PARAMS,
                json!(2),
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a","arguments":"q"}}"#,
                INVALID_PARAMS,
                json!(3),
            ),
            (
                r#"{"jsonrpc":"2.0","id":"i","method":"initialize","params":{}}"#,
                INVALID_PARAMS,
                json!("i"),
            ),
        ];
        for (text, code, id) in cases {
            let r = reject(text.as_bytes()).unwrap_or_else(|| panic!("{text} passed"));
            assert_eq!(r["error"]["code"], json!(code.0), "{text}: {r}");
            assert_eq!(&r["id"], id, "{text}: {r}");
            assert_eq!(r["jsonrpc"], "2.0");
        }
        let m = reject(b"[1]").unwrap()["error"]["message"].to_string();
        assert!(m.contains("array"), "{m}");
    }

    /// What the gate's server side receives and its client side reads back.
    async fn through_gate(input: Vec<u8>) -> (Vec<u8>, Vec<Value>) {
        use tokio::io::AsyncReadExt;
        let (client, gate_side) = tokio::io::duplex(1 << 16);
        let (r, w) = tokio::io::split(gate_side);
        let (mut server_reads, server_writes, out) = gate(r, w);
        let (mut client_r, mut client_w) = tokio::io::split(client);
        let writer = tokio::spawn(async move {
            client_w.write_all(&input).await.unwrap();
            client_w.shutdown().await.unwrap();
        });
        let mut got = Vec::new();
        server_reads.read_to_end(&mut got).await.unwrap();
        writer.await.unwrap();
        drop(server_writes);
        out.await.unwrap();
        let mut answers = String::new();
        client_r.read_to_string(&mut answers).await.unwrap();
        let answers = answers
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (got, answers)
    }

    #[tokio::test]
    async fn the_gate_passes_messages_whole_and_answers_the_rest() {
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let mut input = format!("{ping}\n\nnot json\r\n{ping}\r\n").into_bytes();
        input.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 10));
        input.extend(format!("\n{ping}").as_bytes());
        let (got, answers) = through_gate(input).await;
        assert_eq!(
            String::from_utf8(got).unwrap(),
            format!("{ping}\n{ping}\n{ping}\n")
        );
        assert_eq!(answers.len(), 2, "{answers:?}");
        assert_eq!(answers[0]["error"]["code"], json!(-32700));
        assert_eq!(answers[0]["id"], Value::Null);
        assert_eq!(answers[1]["error"]["code"], json!(-32600));
        let m = answers[1]["error"]["message"].as_str().unwrap();
        assert!(m.contains(&format!("{} bytes", MAX_LINE_BYTES + 10)), "{m}");
    }
}
