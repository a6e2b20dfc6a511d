//! The size a PNG says it has: the first chunk after the signature is `IHDR`, whose first
//! eight bytes are the width and height (big-endian).

const SIGNATURE: &[u8; 8] = b"\x89PNG\r\n\x1a\n";

/// Width and height of a PNG, or `None` when the bytes are not one.
pub(crate) fn dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.get(..8)? != SIGNATURE || bytes.get(12..16)? != b"IHDR" {
        return None;
    }
    let width = u32::from_be_bytes(bytes.get(16..20)?.try_into().ok()?);
    let height = u32::from_be_bytes(bytes.get(20..24)?.try_into().ok()?);
    Some((width, height))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_ihdr_size_and_refuses_anything_else() {
        let mut png = SIGNATURE.to_vec();
        png.extend_from_slice(&13u32.to_be_bytes());
        png.extend_from_slice(b"IHDR");
        png.extend_from_slice(&1280u32.to_be_bytes());
        png.extend_from_slice(&720u32.to_be_bytes());
        assert_eq!(dimensions(&png), Some((1280, 720)));
        assert_eq!(dimensions(&png[..20]), None);
        assert_eq!(dimensions(b"GIF89a...................."), None);
        assert_eq!(dimensions(&[]), None);
    }
}
