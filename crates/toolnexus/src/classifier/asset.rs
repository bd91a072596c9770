//! Image assets a state refers to, and the base64 form they travel in as JSON.
//! Pure: no I/O.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::error::{ClassifierError, msg};

/// Assets by placeholder name. Wherever the name appears in the state, the
/// instructions or the criteria, a System One backend reads it as the image.
/// A per-image UUID makes a good name.
///
/// ```
/// use toolnexus::classifier::{Asset, Assets, ImageFormat};
///
/// let assets = Assets::from([(
///     "img-7f3a".to_string(),
///     Asset { format: ImageFormat::Png, data: vec![0x89, b'P', b'N', b'G'] },
/// )]);
/// assert_eq!(assets["img-7f3a"].format.as_str(), "png");
/// ```
pub type Assets = BTreeMap<String, Asset>;

/// The image formats the wire names.
///
/// ```
/// use toolnexus::classifier::ImageFormat;
///
/// assert_eq!(ImageFormat::from_wire("jpeg"), Some(ImageFormat::Jpeg));
/// assert_eq!(ImageFormat::from_wire("gif"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ImageFormat {
    /// `png`.
    Png,
    /// `jpg`.
    Jpg,
    /// `jpeg`.
    Jpeg,
}

impl ImageFormat {
    /// The wire spelling.
    ///
    /// ```
    /// use toolnexus::classifier::ImageFormat;
    /// assert_eq!(ImageFormat::Jpg.as_str(), "jpg");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpg => "jpg",
            ImageFormat::Jpeg => "jpeg",
        }
    }

    /// Reads the wire spelling (`png`, `jpg`, `jpeg`; case-insensitive).
    ///
    /// ```
    /// use toolnexus::classifier::ImageFormat;
    /// assert_eq!(ImageFormat::from_wire("PNG"), Some(ImageFormat::Png));
    /// ```
    pub fn from_wire(s: &str) -> Option<ImageFormat> {
        match s.trim().to_ascii_lowercase().as_str() {
            "png" => Some(ImageFormat::Png),
            "jpg" => Some(ImageFormat::Jpg),
            "jpeg" => Some(ImageFormat::Jpeg),
            _ => None,
        }
    }

    /// The format the bytes' signature says, if it is one of these.
    ///
    /// ```
    /// use toolnexus::classifier::ImageFormat;
    /// assert_eq!(ImageFormat::sniff(b"\x89PNG\r\n\x1a\n...."), Some(ImageFormat::Png));
    /// assert_eq!(ImageFormat::sniff(b"GIF89a"), None);
    /// ```
    pub fn sniff(data: &[u8]) -> Option<ImageFormat> {
        if data.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(ImageFormat::Png)
        } else if data.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(ImageFormat::Jpeg)
        } else {
            None
        }
    }

    /// The media type of a part carrying it.
    ///
    /// ```
    /// use toolnexus::classifier::ImageFormat;
    /// assert_eq!(ImageFormat::Jpg.media_type(), "image/jpeg");
    /// ```
    pub fn media_type(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpg | ImageFormat::Jpeg => "image/jpeg",
        }
    }
}

impl fmt::Display for ImageFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One image: its declared format and its bytes.
///
/// `Debug` shows the format and the size, never the bytes.
///
/// ```
/// use toolnexus::classifier::{Asset, ImageFormat};
///
/// let a = Asset::from_base64(ImageFormat::Png, "iVBORw0KGgo=")?;
/// assert_eq!(a.data, b"\x89PNG\r\n\x1a\n");
/// assert_eq!(a.to_base64(), "iVBORw0KGgo=");
/// assert_eq!(format!("{a:?}"), "Asset { format: Png, bytes: 8 }");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Asset {
    /// The format the wire declares (the backend detects the real one from the bytes).
    pub format: ImageFormat,
    /// The image file's bytes.
    pub data: Vec<u8>,
}

impl fmt::Debug for Asset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Asset")
            .field("format", &self.format)
            .field("bytes", &self.data.len())
            .finish()
    }
}

impl Asset {
    /// An asset from base64 text (standard alphabet, padding optional,
    /// whitespace ignored). Bad text is an error naming the first bad position.
    ///
    /// ```
    /// use toolnexus::classifier::{Asset, ImageFormat};
    /// let e = Asset::from_base64(ImageFormat::Png, "ab$d").unwrap_err();
    /// assert_eq!(e.to_string(), "classifier: base64 data has a character that is not base64 at byte 2");
    /// ```
    pub fn from_base64(format: ImageFormat, text: &str) -> Result<Asset, ClassifierError> {
        Ok(Asset {
            format,
            data: base64_decode(text).map_err(msg::decode)?,
        })
    }

    /// The bytes as standard, padded base64.
    ///
    /// ```
    /// use toolnexus::classifier::{Asset, ImageFormat};
    /// let a = Asset { format: ImageFormat::Png, data: b"hi".to_vec() };
    /// assert_eq!(a.to_base64(), "aGk=");
    /// ```
    pub fn to_base64(&self) -> String {
        base64_encode(&self.data)
    }

    /// The JSON wire form: `{"type":"image","format":…,"data_base64":…}`.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::{Asset, ImageFormat};
    /// let a = Asset { format: ImageFormat::Png, data: b"hi".to_vec() };
    /// assert_eq!(a.wire(), json!({"type": "image", "format": "png", "data_base64": "aGk="}));
    /// ```
    pub fn wire(&self) -> Value {
        let mut m = Map::new();
        m.insert("data_base64".into(), Value::from(self.to_base64()));
        m.insert("format".into(), Value::from(self.format.as_str()));
        m.insert("type".into(), Value::from("image"));
        Value::Object(m)
    }

    /// Reads the JSON wire form strictly: `type` must be `"image"` (or absent),
    /// `format` one of `png|jpg|jpeg`, `data_base64` base64 text of at least one
    /// byte. A `part` reference (the multipart form) is not resolved here: it is
    /// an error naming the part, for the caller that owns the parts to resolve.
    /// Errors name the asset.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::classifier::Asset;
    ///
    /// let a = Asset::from_wire("photo", &json!({"type": "image", "format": "png", "data_base64": "aGk="}))?;
    /// assert_eq!(a.data, b"hi");
    /// let e = Asset::from_wire("photo", &json!({"type": "image", "format": "gif", "data_base64": "aGk="})).unwrap_err();
    /// assert_eq!(e.to_string(), "classifier: asset \"photo\": \"format\" is \"gif\", not png|jpg|jpeg");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn from_wire(name: &str, v: &Value) -> Result<Asset, ClassifierError> {
        read_asset(v).map_err(|text| msg::asset(name, text))
    }
}

fn read_asset(v: &Value) -> Result<Asset, String> {
    let o = v.as_object().ok_or("asset is not a JSON object")?;
    match o.get("type") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t == "image" => {}
        Some(other) => return Err(format!("\"type\" is {other}, not \"image\"")),
    }
    if let Some(Value::String(part)) = o.get("part") {
        return Err(format!(
            "refers to multipart part {part:?}, which this request does not carry"
        ));
    }
    let format = match o.get("format") {
        Some(Value::String(f)) => ImageFormat::from_wire(f)
            .ok_or_else(|| format!("\"format\" is {f:?}, not png|jpg|jpeg"))?,
        None | Some(Value::Null) => return Err("has no \"format\"".into()),
        Some(_) => return Err("\"format\" is not a string".into()),
    };
    let data = match o.get("data_base64") {
        Some(Value::String(d)) => base64_decode(d)?,
        None | Some(Value::Null) => return Err("has no \"data_base64\"".into()),
        Some(_) => return Err("\"data_base64\" is not a string".into()),
    };
    if data.is_empty() {
        return Err("image data is empty".into());
    }
    Ok(Asset { format, data })
}

/// The JSON wire form of an asset map.
pub(crate) fn assets_wire(assets: &Assets) -> Value {
    Value::Object(assets.iter().map(|(k, a)| (k.clone(), a.wire())).collect())
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut acc: u32 = 0;
    let mut bits = 0;
    let mut padding = false;
    for (i, c) in text.bytes().enumerate() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => {
                padding = true;
                continue;
            }
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => {
                return Err(format!(
                    "base64 data has a character that is not base64 at byte {i}"
                ));
            }
        };
        if padding {
            return Err(format!(
                "base64 data continues after its padding at byte {i}"
            ));
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if bits >= 6 {
        return Err("base64 data is cut short (its length is not a whole number of bytes)".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_every_length() {
        let data: Vec<u8> = (0..=255u8).collect();
        for n in 0..40 {
            let enc = base64_encode(&data[..n]);
            assert_eq!(enc.len() % 4, 0);
            assert_eq!(base64_decode(&enc).unwrap(), &data[..n], "length {n}");
            let unpadded = enc.trim_end_matches('=');
            assert_eq!(base64_decode(unpadded).unwrap(), &data[..n], "unpadded {n}");
        }
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_encode(b"fooba"), "Zm9vYmE=");
        assert_eq!(base64_decode("Zm9v\nYmE=").unwrap(), b"fooba");
    }

    #[test]
    fn base64_refuses_junk() {
        assert!(base64_decode("Zm9v*").is_err());
        assert!(base64_decode("Zg==Zg").is_err());
        assert!(base64_decode("Z").is_err());
    }
}
