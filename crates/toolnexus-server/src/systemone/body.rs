//! Request bodies: read under a cap, undo `Content-Encoding` (zstd, gzip) under
//! the same cap, and split `multipart/form-data`. Pure except for reading the
//! socket in [`read`].
//!
//! The cap (`--max-body-bytes`) bounds the bytes on the wire AND the bytes after
//! decompression. Decoders run as streams into a buffer that never grows past
//! the cap, and a zstd frame whose header asks for a window or declares a
//! content size larger than the cap is refused before the decoder allocates
//! anything, so a decompression bomb is a 413 at a cost of at most the cap.

use std::io::Read;

use axum::body::{Body, Bytes};

/// Why a body was refused, and with which status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyError {
    /// 413: larger than the cap, before or after decompression.
    TooLarge(String),
    /// 400: the bytes do not decode as the encoding they claim, or could not be read.
    Malformed(String),
    /// 415: a `Content-Encoding` this server does not speak.
    UnsupportedEncoding(String),
}

/// Reads the whole body, refusing more than `cap` bytes.
pub async fn read(body: Body, cap: usize) -> Result<Bytes, BodyError> {
    match axum::body::to_bytes(body, cap).await {
        Ok(b) => Ok(b),
        Err(e) => {
            let too_large =
                std::iter::successors(Some(&e as &(dyn std::error::Error + 'static)), |c| {
                    c.source()
                })
                .any(|c| c.is::<http_body_util::LengthLimitError>())
                    || e.to_string().contains("length limit");
            if too_large {
                Err(too_large_body(cap))
            } else {
                Err(BodyError::Malformed(format!(
                    "cannot read the request body: {e}"
                )))
            }
        }
    }
}

fn too_large_body(cap: usize) -> BodyError {
    BodyError::TooLarge(format!("request body is larger than {cap} bytes"))
}

fn too_large_decoded(encoding: &str, cap: usize) -> BodyError {
    BodyError::TooLarge(format!(
        "request body is larger than {cap} bytes once {encoding}-decoded"
    ))
}

/// One content coding this server can undo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    Zstd,
    Gzip,
}

impl Coding {
    fn as_str(self) -> &'static str {
        match self {
            Coding::Zstd => "zstd",
            Coding::Gzip => "gzip",
        }
    }
}

/// The codings a `Content-Encoding` value lists, in the order they were applied.
fn codings(header: &str) -> Result<Vec<Coding>, BodyError> {
    let mut out = Vec::new();
    for token in header.split(',') {
        let token = token.trim().to_ascii_lowercase();
        match token.as_str() {
            "" | "identity" => {}
            "zstd" => out.push(Coding::Zstd),
            "gzip" | "x-gzip" => out.push(Coding::Gzip),
            other => {
                return Err(BodyError::UnsupportedEncoding(format!(
                    "Content-Encoding {other:?} is not supported (send zstd, gzip or identity)"
                )));
            }
        }
    }
    if out.len() > 2 {
        return Err(BodyError::UnsupportedEncoding(format!(
            "Content-Encoding {header:?} stacks {} codings; at most 2 are undone",
            out.len()
        )));
    }
    Ok(out)
}

/// Undoes every coding `content_encoding` lists (last applied first), each
/// output held to `cap` bytes.
pub fn decode(raw: Bytes, content_encoding: Option<&str>, cap: usize) -> Result<Bytes, BodyError> {
    let Some(header) = content_encoding else {
        return Ok(raw);
    };
    let mut body = raw;
    for coding in codings(header)?.into_iter().rev() {
        let out = match coding {
            Coding::Zstd => unzstd(&body, cap)?,
            Coding::Gzip => gunzip(&body, cap)?,
        };
        body = Bytes::from(out);
    }
    Ok(body)
}

/// Reads `r` to its end into a buffer that never holds or reserves more than
/// `cap` bytes; one byte more is [`BodyError::TooLarge`].
fn read_capped(
    r: &mut impl Read,
    out: &mut Vec<u8>,
    cap: usize,
    coding: Coding,
) -> Result<(), BodyError> {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(BodyError::Malformed(format!(
                    "request body is not valid {}: {e}",
                    coding.as_str()
                )));
            }
        };
        if out.len() + n > cap {
            return Err(too_large_decoded(coding.as_str(), cap));
        }
        if out.capacity() - out.len() < n {
            let want = (out.capacity() * 2)
                .max(out.len() + n)
                .max(16 * 1024)
                .min(cap);
            out.reserve_exact(want - out.len());
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

fn gunzip(input: &[u8], cap: usize) -> Result<Vec<u8>, BodyError> {
    if input.is_empty() {
        return Err(BodyError::Malformed(
            "request body is empty but says it is gzip".into(),
        ));
    }
    let mut out = Vec::new();
    let mut decoder = flate2::read::MultiGzDecoder::new(input);
    read_capped(&mut decoder, &mut out, cap, Coding::Gzip)?;
    Ok(out)
}

const ZSTD_MAGIC: u32 = 0xFD2F_B528;

/// What a zstd frame header says about the memory decoding it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FrameHeader {
    /// The history the decoder must keep (it allocates this up front).
    window: u64,
    /// The decoded size, when the frame declares it.
    content_size: Option<u64>,
    /// The header's length in bytes, magic number included.
    len: usize,
    /// Where the window descriptor byte is, when there is one.
    window_at: Option<usize>,
}

/// Reads a zstd frame header (RFC 8878 §3.1.1.1) from the start of `b`, which
/// begins with the frame magic number.
fn frame_header(b: &[u8]) -> Result<FrameHeader, String> {
    let descriptor = *b.get(4).ok_or("a zstd frame header is cut short")?;
    let fcs_flag = descriptor >> 6;
    let single_segment = descriptor & 0x20 != 0;
    if descriptor & 0x08 != 0 {
        return Err("a zstd frame header sets its reserved bit".into());
    }
    let dict_len = [0usize, 1, 2, 4][usize::from(descriptor & 0x03)];
    let fcs_len = match (fcs_flag, single_segment) {
        (0, false) => 0,
        (0, true) => 1,
        (1, _) => 2,
        (2, _) => 4,
        _ => 8,
    };
    let mut at = 5;
    let (window_descriptor, window_at) = if single_segment {
        (None, None)
    } else {
        let w = *b.get(at).ok_or("a zstd frame header is cut short")?;
        at += 1;
        (Some(w), Some(at - 1))
    };
    at += dict_len;
    let fcs_bytes = b
        .get(at..at + fcs_len)
        .ok_or("a zstd frame header is cut short")?;
    let mut content_size = None;
    if fcs_len > 0 {
        let mut v = 0u64;
        for (i, byte) in fcs_bytes.iter().enumerate() {
            v |= u64::from(*byte) << (8 * i);
        }
        if fcs_len == 2 {
            v += 256;
        }
        content_size = Some(v);
    }
    let window = match window_descriptor {
        None => content_size.unwrap_or(0),
        Some(w) => window_size(w),
    };
    Ok(FrameHeader {
        window,
        content_size,
        len: at + fcs_len,
        window_at,
    })
}

/// The window a window descriptor byte stands for.
fn window_size(descriptor: u8) -> u64 {
    let base = 1u64 << (10 + u64::from(descriptor >> 3));
    base + (base / 8) * u64::from(descriptor & 0x07)
}

/// The smallest window descriptor whose window holds `bytes` (at least 1 KiB).
fn window_descriptor_for(bytes: u64) -> u8 {
    (0u8..=255)
        .find(|d| window_size(*d) >= bytes)
        .unwrap_or(255)
}

/// The frame header rewritten so the decoder keeps no more history than the
/// output it may produce: a declared content size becomes the window (the
/// single-segment form), else a window over `limit` shrinks to the smallest one
/// that holds `limit`. Neither changes what the frame decodes to within the
/// limit: no match can reach further back than the bytes already produced.
fn bounded_header(b: &[u8], h: &FrameHeader, limit: u64) -> Vec<u8> {
    let mut out = b[..h.len].to_vec();
    match (h.window_at, h.content_size) {
        (Some(at), Some(_)) => {
            // Single segment: the window is the content size. (With a content
            // size the descriptor's size flag is at least 1, so the field keeps
            // its length.)
            out[4] |= 0x20;
            out.remove(at);
        }
        (Some(at), None) if h.window > limit => {
            let d = window_descriptor_for(limit);
            if window_size(d) < h.window {
                out[at] = d;
            }
        }
        _ => {}
    }
    out
}

/// Decodes every zstd frame of `input` (skippable frames are skipped), the
/// output held to `cap` bytes. A frame declaring more content than fits is
/// refused before decoding, and the decoder's history buffer is bounded by the
/// output it may still produce (see [`bounded_header`]). Frame checksums are
/// verified when present.
fn unzstd(input: &[u8], cap: usize) -> Result<Vec<u8>, BodyError> {
    let bad = |why: String| BodyError::Malformed(format!("request body is not valid zstd: {why}"));
    if input.is_empty() {
        return Err(BodyError::Malformed(
            "request body is empty but says it is zstd".into(),
        ));
    }
    let mut out = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let magic = rest
            .get(..4)
            .map(|m| u32::from_le_bytes([m[0], m[1], m[2], m[3]]))
            .ok_or_else(|| bad("trailing bytes after the last frame".into()))?;
        if magic & 0xFFFF_FFF0 == 0x184D_2A50 {
            let size = rest
                .get(4..8)
                .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize)
                .ok_or_else(|| bad("a skippable frame is cut short".into()))?;
            rest = rest
                .get(8 + size..)
                .ok_or_else(|| bad("a skippable frame is cut short".into()))?;
            continue;
        }
        if magic != ZSTD_MAGIC {
            return Err(bad("no zstd frame magic number".into()));
        }
        let header = frame_header(rest).map_err(bad)?;
        let room = (cap - out.len()) as u64;
        if header.content_size.is_some_and(|n| n > room) {
            return Err(too_large_decoded("zstd", cap));
        }
        let head = bounded_header(rest, &header, room + 1);
        let mut tail = &rest[header.len..];
        let source = std::io::Read::chain(head.as_slice(), &mut tail);
        let mut decoder =
            ruzstd::decoding::StreamingDecoder::new(source).map_err(|e| bad(e.to_string()))?;
        read_capped(&mut decoder, &mut out, cap, Coding::Zstd)?;
        let frame = decoder.decoder;
        let sums = (
            frame.get_checksum_from_data(),
            frame.get_calculated_checksum(),
        );
        if let (Some(sent), Some(computed)) = sums
            && sent != computed
        {
            return Err(bad("frame checksum does not match its content".into()));
        }
        rest = tail;
    }
    Ok(out)
}

/// One part of a `multipart/form-data` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The `name` of its `Content-Disposition`.
    pub name: String,
    /// Its `Content-Type`, lower-cased, without parameters.
    pub content_type: Option<String>,
    /// Its bytes (a slice of the body: nothing is copied).
    pub data: Bytes,
}

/// The most parts one body may carry.
pub const MAX_PARTS: usize = 256;

/// The `boundary` parameter of a `multipart/form-data` content type, or `None`
/// when the content type is not multipart/form-data.
pub fn multipart_boundary(content_type: &str) -> Option<Result<String, String>> {
    let mut params = content_type.split(';');
    let media = params.next()?.trim();
    if !media.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    for p in params {
        let Some((k, v)) = p.split_once('=') else {
            continue;
        };
        if k.trim().eq_ignore_ascii_case("boundary") {
            let v = v.trim().trim_matches('"');
            if v.is_empty() || v.len() > 200 {
                return Some(Err("the multipart boundary is empty or too long".into()));
            }
            return Some(Ok(v.to_string()));
        }
    }
    Some(Err(
        "multipart/form-data without a boundary parameter".into()
    ))
}

/// Splits a `multipart/form-data` body (RFC 7578) into its parts.
pub fn parse_multipart(body: &Bytes, boundary: &str) -> Result<Vec<Part>, String> {
    let delimiter = format!("--{boundary}");
    let finder = memchr::memmem::Finder::new(delimiter.as_bytes());
    let next_delimiter = format!("\r\n--{boundary}");
    let next_finder = memchr::memmem::Finder::new(next_delimiter.as_bytes());
    let b = body.as_ref();
    // The first delimiter may follow a preamble; it starts the body or a line.
    let mut at = match finder.find(b) {
        Some(0) => 0,
        Some(_) => next_finder
            .find(b)
            .map(|i| i + 2)
            .ok_or("the multipart body has no opening boundary")?,
        None => return Err("the multipart body has no opening boundary".into()),
    };
    let mut parts = Vec::new();
    loop {
        at += delimiter.len();
        let after = &b[at..];
        if after.starts_with(b"--") {
            return Ok(parts);
        }
        // Transport padding (spaces, tabs) may follow a delimiter before its CRLF.
        let pad = after
            .iter()
            .take_while(|c| **c == b' ' || **c == b'\t')
            .count();
        if !after[pad..].starts_with(b"\r\n") {
            return Err("a multipart boundary is not followed by a line break".into());
        }
        at += pad + 2;
        let (headers, content_start) = if b[at..].starts_with(b"\r\n") {
            ("", at + 2)
        } else {
            let end = memchr::memmem::find(&b[at..], b"\r\n\r\n")
                .map(|i| at + i)
                .ok_or("a multipart part has no end to its headers")?;
            let text = std::str::from_utf8(&b[at..end])
                .map_err(|_| "a multipart part's headers are not UTF-8")?;
            (text, end + 4)
        };
        let content_end = next_finder
            .find(&b[content_start..])
            .map(|i| content_start + i)
            .ok_or("the multipart body has no closing boundary")?;
        let (name, content_type) = part_headers(headers)?;
        if parts.len() == MAX_PARTS {
            return Err(format!(
                "the multipart body has more than {MAX_PARTS} parts"
            ));
        }
        parts.push(Part {
            name,
            content_type,
            data: body.slice(content_start..content_end),
        });
        at = content_end + 2;
    }
}

/// The name and content type a part's headers give it.
fn part_headers(headers: &str) -> Result<(String, Option<String>), String> {
    let mut name = None;
    let mut content_type = None;
    for line in headers.split("\r\n") {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let k = k.trim();
        if k.eq_ignore_ascii_case("content-disposition") {
            let mut params = v.split(';');
            let kind = params.next().unwrap_or("").trim();
            if !kind.eq_ignore_ascii_case("form-data") {
                return Err(format!(
                    "a multipart part's Content-Disposition is {kind:?}, not form-data"
                ));
            }
            for p in params {
                let Some((pk, pv)) = p.split_once('=') else {
                    continue;
                };
                if pk.trim().eq_ignore_ascii_case("name") {
                    name = Some(pv.trim().trim_matches('"').to_string());
                }
            }
        } else if k.eq_ignore_ascii_case("content-type") {
            let media = v
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            if !media.is_empty() {
                content_type = Some(media);
            }
        }
    }
    let name = name.ok_or("a multipart part has no Content-Disposition name")?;
    Ok((name, content_type))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zstd(data: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn zstd_and_gzip_bodies_decode() {
        let json = br#"{"state":"hi","questions":{}}"#.repeat(100);
        for (enc, wire) in [
            ("zstd", zstd(&json)),
            ("gzip", gzip(&json)),
            ("GZIP", gzip(&json)),
        ] {
            let out = decode(Bytes::from(wire), Some(enc), 1 << 20).unwrap();
            assert_eq!(out.as_ref(), json.as_slice(), "{enc}");
        }
        let out = decode(Bytes::from_static(b"{}"), Some("identity"), 10).unwrap();
        assert_eq!(out.as_ref(), b"{}");
        let out = decode(Bytes::from_static(b"{}"), None, 10).unwrap();
        assert_eq!(out.as_ref(), b"{}");
    }

    #[test]
    fn stacked_codings_are_undone_last_first() {
        let json = b"{\"a\":1}".repeat(50);
        let wire = zstd(&gzip(&json));
        let out = decode(Bytes::from(wire), Some("gzip, zstd"), 1 << 16).unwrap();
        assert_eq!(out.as_ref(), json.as_slice());
    }

    #[test]
    fn concatenated_and_skippable_zstd_frames_decode() {
        let mut wire = zstd(b"hello ");
        wire.extend_from_slice(&[0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 1, 2, 3]);
        wire.extend(zstd(b"world"));
        let out = decode(Bytes::from(wire), Some("zstd"), 100).unwrap();
        assert_eq!(out.as_ref(), b"hello world");
    }

    #[test]
    fn a_bomb_is_too_large_and_never_decoded_past_the_cap() {
        let big = vec![b'a'; 4 << 20];
        for (enc, wire) in [("zstd", zstd(&big)), ("gzip", gzip(&big))] {
            assert!(wire.len() < 64 * 1024, "{enc}: {}", wire.len());
            let e = decode(Bytes::from(wire), Some(enc), 1 << 20).unwrap_err();
            assert!(matches!(e, BodyError::TooLarge(_)), "{enc}: {e:?}");
        }
    }

    #[test]
    fn the_output_buffer_never_reserves_past_the_cap() {
        let data = vec![7u8; 100_000];
        let mut out = Vec::new();
        read_capped(&mut data.as_slice(), &mut out, 100_000, Coding::Gzip).unwrap();
        assert_eq!(out.len(), 100_000);
        assert!(out.capacity() <= 100_000, "{}", out.capacity());
        let mut out = Vec::new();
        let e = read_capped(&mut data.as_slice(), &mut out, 99_999, Coding::Gzip).unwrap_err();
        assert!(matches!(e, BodyError::TooLarge(_)));
        assert!(out.capacity() <= 99_999);
    }

    #[test]
    fn a_frame_declaring_more_than_the_cap_is_refused_before_decoding() {
        // Magic, descriptor (single segment, 4-byte content size) of 64 MiB.
        let mut wire = ZSTD_MAGIC.to_le_bytes().to_vec();
        wire.extend_from_slice(&[0xA0]);
        wire.extend_from_slice(&(64u32 << 20).to_le_bytes());
        let e = decode(Bytes::from(wire), Some("zstd"), 1 << 20).unwrap_err();
        assert!(matches!(e, BodyError::TooLarge(_)), "{e:?}");
    }

    #[test]
    fn a_huge_declared_window_is_bounded_by_the_cap() {
        // A frame with no content size that asks for a 1 GiB window.
        let mut wire = ZSTD_MAGIC.to_le_bytes().to_vec();
        wire.extend_from_slice(&[0x00, (30 - 10) << 3]);
        let h = frame_header(&wire).unwrap();
        assert_eq!(h.window, 1 << 30);
        let head = bounded_header(&wire, &h, 1 << 20);
        let bounded = frame_header(&head).unwrap();
        assert_eq!(bounded.window, 1 << 20);
        // And a frame with a content size decodes with a window of that size.
        let wire = zstd(&vec![3u8; 300_000]);
        let h = frame_header(&wire).unwrap();
        let bounded = frame_header(&bounded_header(&wire, &h, 1 << 20)).unwrap();
        assert!(bounded.window <= (1 << 20) + 1, "{bounded:?}");
        let out = decode(Bytes::from(wire), Some("zstd"), 300_000).unwrap();
        assert_eq!(out.len(), 300_000);
    }

    #[test]
    fn window_descriptors_cover_the_limit() {
        assert_eq!(window_size(0), 1024);
        assert_eq!(window_size(window_descriptor_for(1)), 1024);
        for n in [1025u64, 4096, 1 << 20, (1 << 20) + 1, 3_000_000] {
            let w = window_size(window_descriptor_for(n));
            assert!(w >= n && w <= n + n / 8 + 1024, "{n}: {w}");
        }
    }

    #[test]
    fn frame_headers_read_window_and_content_size() {
        let wire = zstd(&vec![1u8; 5000]);
        let h = frame_header(&wire).unwrap();
        assert!(h.window >= 1024, "{h:?}");
        if let Some(n) = h.content_size {
            assert_eq!(n, 5000);
        }
    }

    #[test]
    fn bad_bodies_and_unknown_codings_are_named() {
        let e = decode(Bytes::from_static(b"{\"a\":1}"), Some("zstd"), 100).unwrap_err();
        assert!(
            matches!(&e, BodyError::Malformed(m) if m.contains("not valid zstd")),
            "{e:?}"
        );
        let e = decode(Bytes::from_static(b"{\"a\":1}"), Some("gzip"), 100).unwrap_err();
        assert!(
            matches!(&e, BodyError::Malformed(m) if m.contains("not valid gzip")),
            "{e:?}"
        );
        let e = decode(Bytes::from_static(b"x"), Some("br"), 100).unwrap_err();
        assert_eq!(
            e,
            BodyError::UnsupportedEncoding(
                "Content-Encoding \"br\" is not supported (send zstd, gzip or identity)".into()
            )
        );
        let mut corrupt = zstd(&b"{\"state\":\"hello\"}".repeat(40));
        let n = corrupt.len();
        corrupt[n / 2] ^= 0xFF;
        corrupt.truncate(n - 1);
        assert!(decode(Bytes::from(corrupt), Some("zstd"), 1 << 16).is_err());
    }

    fn multipart(boundary: &str, parts: &[(&str, &str, &[u8])]) -> Bytes {
        let mut b = Vec::new();
        for (name, ct, data) in parts {
            b.extend_from_slice(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}\"\r\nContent-Type: {ct}\r\n\r\n"
                )
                .as_bytes(),
            );
            b.extend_from_slice(data);
            b.extend_from_slice(b"\r\n");
        }
        b.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        Bytes::from(b)
    }

    #[test]
    fn multipart_bodies_split_into_parts() {
        let png = b"\x89PNG\r\n\x1a\n\r\n--not-the-boundary\r\n";
        let body = multipart(
            "abc123",
            &[
                ("request", "application/json", b"{\"a\":1}"),
                ("asset-0", "image/png", png),
            ],
        );
        let ct = "multipart/form-data; boundary=abc123";
        let boundary = multipart_boundary(ct).unwrap().unwrap();
        let parts = parse_multipart(&body, &boundary).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, "request");
        assert_eq!(parts[0].content_type.as_deref(), Some("application/json"));
        assert_eq!(parts[0].data.as_ref(), b"{\"a\":1}");
        assert_eq!(parts[1].name, "asset-0");
        assert_eq!(parts[1].data.as_ref(), png);
    }

    #[test]
    fn multipart_content_types_and_damage_are_reported() {
        assert!(multipart_boundary("application/json").is_none());
        assert_eq!(
            multipart_boundary("Multipart/Form-Data; boundary=\"q\"").unwrap(),
            Ok("q".to_string())
        );
        assert!(multipart_boundary("multipart/form-data").unwrap().is_err());
        let body = multipart("b", &[("request", "application/json", b"{}")]);
        let cut = body.slice(..body.len() - 8);
        assert!(parse_multipart(&cut, "b").is_err());
        assert!(parse_multipart(&Bytes::from_static(b"nothing"), "b").is_err());
        let no_name = Bytes::from_static(b"--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--\r\n");
        assert_eq!(
            parse_multipart(&no_name, "b").unwrap_err(),
            "a multipart part has no Content-Disposition name"
        );
    }
}
