//! A response body sent as the pieces it was written in: none copied into another (an answer
//! of a long session is its events' bytes as the store wrote them, between the fields before and
//! after them), its length known, so it goes out with a `Content-Length` as one body would.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};

/// The pieces, in order.
#[derive(Debug, Default)]
pub(crate) struct Pieces(VecDeque<Bytes>);

impl<const N: usize> From<[Vec<u8>; N]> for Pieces {
    fn from(pieces: [Vec<u8>; N]) -> Self {
        Self(pieces.into_iter().filter(|p| !p.is_empty()).map(Bytes::from).collect())
    }
}

impl http_body::Body for Pieces {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.pop_front().map(|piece| Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.iter().map(|p| p.len() as u64).sum())
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt as _;

    use super::*;

    #[tokio::test]
    async fn the_pieces_make_one_body_of_known_length() {
        let pieces = Pieces::from([b"{\"events\":[".to_vec(), Vec::new(), b"1,2".to_vec(), b"]}".to_vec()]);
        assert_eq!(http_body::Body::size_hint(&pieces).exact(), Some(16));
        let bytes = pieces.collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"{\"events\":[1,2]}");
    }

    #[tokio::test]
    async fn an_axum_answer_of_pieces_has_its_length() {
        let body = axum::body::Body::new(Pieces::from([b"ab".to_vec(), b"cd".to_vec()]));
        let response = axum::response::Response::new(body);
        assert_eq!(http_body::Body::size_hint(response.body()).exact(), Some(4));
    }
}
