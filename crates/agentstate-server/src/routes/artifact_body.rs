//! Large artifacts through the JSON routes without extra copies. A save's base64 is decoded
//! where it lies in the request's buffer (the bytes land over the text they were read from), and
//! the rest of the body, without it, is read as any body is; a load is answered as a stream: the
//! part's JSON around base64 encoded a chunk at a time from the payload, read from its file when
//! the store keeps one. So a save holds the artifact whole once (its request) and a load from
//! the filesystem store never does.

use std::ops::Range;

use agentstate::artifact::model::ADK_BASE64;
use agentstate::store::{Bytes, Payload};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE;
use bytes::BytesMut;
use futures_util::{Stream, StreamExt as _, stream};
use serde::Deserialize;
use serde_json::value::RawValue;

/// Bodies from this size on take the in-place path (a smaller one is read whole, as any body).
pub(crate) const IN_PLACE_FROM: usize = 64 << 10;

/// How much of a payload one base64 chunk of an answer encodes (a multiple of 3).
const ENCODE_CHUNK: usize = 192 << 10;

/// How much base64 one step of the in-place decoder reads (a multiple of 4).
const DECODE_STEP: usize = 4096;

#[derive(Deserialize)]
struct BodyProbe<'a> {
    #[serde(borrow)]
    artifact: Option<PartProbe<'a>>,
}

#[derive(Deserialize)]
struct PartProbe<'a> {
    #[serde(borrow, rename = "inlineData", alias = "inline_data")]
    inline_data: Option<BlobProbe<'a>>,
}

#[derive(Deserialize)]
struct BlobProbe<'a> {
    #[serde(borrow)]
    data: Option<&'a RawValue>,
}

/// A save body with its `artifact.inlineData.data` taken out: the rest (that string replaced by
/// `null`) and where the string's text lies in the body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Taken {
    /// The body without the data.
    pub(crate) rest: Vec<u8>,
    /// The base64 text's place in the body (inside its quotes).
    pub(crate) span: Range<usize>,
}

/// Finds the inline data's base64 in a save body; `None` when the body is not one whose data is
/// a plain JSON string (it is then read as any body, which answers its errors).
pub(crate) fn take_data(body: &[u8]) -> Option<Taken> {
    let probe: BodyProbe<'_> = serde_json::from_slice(body).ok()?;
    let raw = probe.artifact?.inline_data?.data?.get();
    let text = raw.strip_prefix('"')?.strip_suffix('"')?;
    // An escape would make the text differ from the string: read such a body the usual way.
    if text.contains('\\') {
        return None;
    }
    let start = (text.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
    let span = start..start + text.len();
    if body.get(span.clone())? != text.as_bytes() {
        return None;
    }
    let mut rest = Vec::with_capacity(body.len() - text.len() + 4);
    rest.extend_from_slice(&body[..start - 1]);
    rest.extend_from_slice(b"null");
    rest.extend_from_slice(&body[span.end + 1..]);
    Some(Taken { rest, span })
}

/// Decodes the base64 at `span` of `body` in place, as ADK's clients send it (URL-safe or
/// standard, padded or not), and answers the bytes: a slice of the same buffer, never a copy.
/// `None` for text that is not base64.
pub(crate) fn decode_in_place(mut buffer: BytesMut, span: Range<usize>) -> Option<Bytes> {
    let (mut read, mut written) = (span.start, span.start);
    let mut step = [0u8; DECODE_STEP];
    while read < span.end {
        let len = DECODE_STEP.min(span.end - read);
        for (to, from) in step.iter_mut().zip(&buffer[read..read + len]) {
            *to = match from {
                b'+' => b'-',
                b'/' => b'_',
                b => *b,
            };
        }
        // Each step writes at most 3/4 of what it read, behind where it read: never over text
        // not yet read.
        written += ADK_BASE64.decode_slice(&step[..len], &mut buffer[written..span.end]).ok()?;
        read += len;
    }
    Some(buffer.freeze().slice(span.start..written))
}

/// How long [`encoded`]'s answer is.
pub(crate) fn encoded_len(prefix: &str, payload: &Payload, suffix: &str) -> u64 {
    prefix.len() as u64 + payload.size().div_ceil(3) * 4 + suffix.len() as u64
}

/// An inline-data answer as a stream: `prefix`, the payload in base64 (URL-safe, padded, as ADK
/// for Python answers it) a chunk at a time, `suffix`.
pub(crate) fn encoded(
    prefix: String,
    payload: Payload,
    suffix: String,
) -> impl Stream<Item = agentstate::Result<Bytes>> + Send {
    let chunks = match payload {
        Payload::Whole(bytes) => {
            let count = bytes.len().div_ceil(ENCODE_CHUNK);
            let slices =
                (0..count).map(move |i| Ok(bytes.slice(i * ENCODE_CHUNK..((i + 1) * ENCODE_CHUNK).min(bytes.len()))));
            stream::iter(slices).boxed()
        }
        Payload::Chunks { stream, .. } => stream,
    };
    // Chunks are cut anywhere: the bytes past the last whole group of 3 wait for the next one.
    let body = stream::unfold((chunks, Bytes::new(), Some(suffix)), |(mut chunks, carry, suffix)| async move {
        let suffix = suffix?;
        match chunks.next().await {
            Some(Ok(chunk)) => {
                let joined = match carry.is_empty() {
                    true => chunk,
                    false => Bytes::from([&carry[..], &chunk[..]].concat()),
                };
                let whole = joined.len() / 3 * 3;
                let text = Bytes::from(URL_SAFE.encode(&joined[..whole]));
                Some((Ok(text), (chunks, joined.slice(whole..), Some(suffix))))
            }
            Some(Err(e)) => Some((Err(e), (chunks, carry, None))),
            None => Some((Ok(Bytes::from(URL_SAFE.encode(&carry) + &suffix)), (chunks, Bytes::new(), None))),
        }
    });
    stream::once(std::future::ready(Ok(Bytes::from(prefix)))).chain(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn answer(payload: Payload) -> String {
        let chunks: Vec<_> = encoded("[".into(), payload, "]".into()).collect().await;
        chunks.into_iter().map(|c| String::from_utf8(c.unwrap().to_vec()).unwrap()).collect()
    }

    #[tokio::test]
    async fn answers_encode_as_the_whole_payload_would_wherever_its_chunks_are_cut() {
        let payload: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 256) as u8).collect();
        let expected = format!("[{}]", URL_SAFE.encode(&payload));
        assert_eq!(answer(Payload::Whole(Bytes::from(payload.clone()))).await, expected);
        for cut in [1, 2, 3, 4, 5, 7, 64, 999] {
            let chunks: Vec<agentstate::Result<Bytes>> =
                payload.chunks(cut).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
            assert_eq!(
                answer(Payload::Chunks { stream: stream::iter(chunks).boxed(), size: payload.len() as u64 }).await,
                expected,
                "cut {cut}"
            );
        }
        assert_eq!(answer(Payload::Whole(Bytes::new())).await, "[]");
    }

    #[test]
    fn bodies_the_in_place_path_cannot_read_are_left_to_the_usual_one() {
        for body in [
            &br#"{"filename": "a", "artifact": {"inlineData": {"data": "AA\/w=="}}}"#[..],
            br#"{"filename": "a", "artifact": {"text": "hi"}}"#,
            br#"{"filename": "a", "artifact": "x"}"#,
            br#"[1]"#,
            br#"{"artifact": {"inlineData": {"data": 5}}}"#,
        ] {
            assert_eq!(take_data(body), None, "{}", String::from_utf8_lossy(body));
        }
        let long = "QUJD".repeat(3000) + "QUI";
        let body = format!(r#"{{"artifact": {{"inline_data": {{"data": "{long}"}}}}}}"#);
        let taken = take_data(body.as_bytes()).unwrap();
        let decoded = decode_in_place(BytesMut::from(body.as_bytes()), taken.span).unwrap();
        assert_eq!(decoded, "ABC".repeat(3000) + "AB");
        let bad = body.replace("QUI\"", "Q\"").replace("QUJD", "QU!D");
        let taken = take_data(bad.as_bytes()).unwrap();
        assert_eq!(decode_in_place(BytesMut::from(bad.as_bytes()), taken.span), None);
    }

    #[test]
    fn the_data_is_taken_out_and_decoded_where_it_lies() {
        let body = br#"{"filename": "a.bin", "artifact": {"inlineData": {"mimeType": "x/y", "data": "AAEC_w=="}}}"#;
        let taken = take_data(body).unwrap();
        assert_eq!(&body[taken.span.clone()], b"AAEC_w==");
        let rest: serde_json::Value = serde_json::from_slice(&taken.rest).unwrap();
        assert_eq!(rest["artifact"]["inlineData"], serde_json::json!({"mimeType": "x/y", "data": null}));
        let decoded = decode_in_place(BytesMut::from(&body[..]), taken.span).unwrap();
        assert_eq!(&decoded[..], &[0, 1, 2, 255]);
    }
}
