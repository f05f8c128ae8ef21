#![allow(dead_code)]
//! A keep-alive HTTP/1.1 server on loopback, in raw HTTP, that counts the connections opened
//! to it: for tests of connection reuse, where a framework server would hide when and why a
//! connection ends. Each request (its head and the body its `content-length` declares) is
//! answered by a function that writes the whole answer to the connection.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Starts the server; answers its address and the count of connections opened so far.
pub fn counting_server(
    answer: impl Fn(&mut TcpStream) -> std::io::Result<()> + Send + Sync + 'static,
) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            counted.fetch_add(1, Ordering::SeqCst);
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut pending = Vec::new();
                while read_request(&mut stream, &mut pending) {
                    if answer(&mut stream).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (address, connections)
}

/// Reads one request off `stream` (`pending` holds what was read past the last one); false
/// once the client has gone.
fn read_request(stream: &mut TcpStream, pending: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 4096];
    let mut fill = |pending: &mut Vec<u8>| match stream.read(&mut buf) {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            pending.extend_from_slice(&buf[..n]);
            true
        }
    };
    let head_end = loop {
        if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        if !fill(pending) {
            return false;
        }
    };
    let head = String::from_utf8_lossy(&pending[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map_or(0, |value| value.trim().parse().unwrap_or(0));
    while pending.len() < head_end + length {
        if !fill(pending) {
            return false;
        }
    }
    pending.drain(..head_end + length);
    true
}

/// Writes `bytes` and sends them at once.
pub fn send(stream: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    stream.write_all(bytes)?;
    stream.flush()
}

/// The head of a `200 OK` answer of `content_type` whose body follows in chunks.
pub fn chunked_head(content_type: &str) -> Vec<u8> {
    format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n")
        .into_bytes()
}

/// `data` as one chunk of a chunked body.
pub fn chunk(data: &[u8]) -> Vec<u8> {
    let mut framed = format!("{:x}\r\n", data.len()).into_bytes();
    framed.extend_from_slice(data);
    framed.extend_from_slice(b"\r\n");
    framed
}

/// The end of a chunked body.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";
