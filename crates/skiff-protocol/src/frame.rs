//! Framing: the 4-byte big-endian size prefix in front of every request, checked before any
//! buffer is allocated for the frame.
//!
//! Thread-safety: pure functions. No on-disk format.

use crate::error::FrameError;

/// Default largest request accepted, Kafka's `socket.request.max.bytes` default (100 MiB):
/// clients already size their requests under it, and it caps what one frame can pin.
pub const DEFAULT_MAX_REQUEST_SIZE: usize = 104_857_600;

/// Reads the 4-byte size prefix. Errors for negative sizes and sizes over `max`; the caller
/// then closes the connection without allocating.
pub fn check_frame_size(prefix: [u8; 4], max: usize) -> Result<usize, FrameError> {
    let size = i32::from_be_bytes(prefix);
    let size = usize::try_from(size).map_err(|_| FrameError::Negative(size))?;
    if size > max {
        return Err(FrameError::TooLarge { size, max });
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(check_frame_size([0, 0, 0, 0], 10), Ok(0));
        assert_eq!(check_frame_size([0, 0, 0, 10], 10), Ok(10));
        assert_eq!(
            check_frame_size([0, 0, 0, 11], 10),
            Err(FrameError::TooLarge { size: 11, max: 10 })
        );
        assert_eq!(
            check_frame_size([0xff, 0xff, 0xff, 0xff], 10),
            Err(FrameError::Negative(-1))
        );
        assert_eq!(
            check_frame_size([0x7f, 0xff, 0xff, 0xff], DEFAULT_MAX_REQUEST_SIZE),
            Err(FrameError::TooLarge {
                size: i32::MAX as usize,
                max: DEFAULT_MAX_REQUEST_SIZE
            })
        );
    }
}
