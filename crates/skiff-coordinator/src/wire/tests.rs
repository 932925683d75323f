use super::*;

#[test]
fn the_two_long_string_cuts_differ_only_inside_a_char() {
    // 32766 ASCII bytes then a 2-byte char straddling the i16::MAX limit.
    let s = format!("{}é", "a".repeat(i16::MAX as usize - 1));
    let mut at_char = Vec::new();
    put_str(&mut at_char, &s);
    assert_eq!(&at_char[..2], &(i16::MAX - 1).to_be_bytes());
    assert_eq!(at_char.len(), 2 + i16::MAX as usize - 1);
    let mut at_byte = Vec::new();
    put_str_cut_at_byte(&mut at_byte, &s);
    assert_eq!(&at_byte[..2], &i16::MAX.to_be_bytes());
    assert_eq!(at_byte.len(), 2 + i16::MAX as usize);
    // Short strings are the same either way.
    let (mut a, mut b) = (Vec::new(), Vec::new());
    put_str(&mut a, "gé");
    put_str_cut_at_byte(&mut b, "gé");
    assert_eq!(a, b);
    assert_eq!(a, [0, 3, b'g', 0xc3, 0xa9]);
}

#[test]
fn compact_and_int16_strings_read_back() {
    let mut out = Vec::new();
    put_str(&mut out, "ab");
    put_nullable_str(&mut out, None);
    put_compact_str(&mut out, "c");
    put_compact_nullable(&mut out, None);
    put_uvarint(&mut out, 300);
    assert_eq!(out, [0, 2, b'a', b'b', 0xff, 0xff, 2, b'c', 0, 0xac, 0x02]);
    let mut r = Reader::new(&out);
    assert_eq!(r.str("s").unwrap(), "ab");
    assert_eq!(r.nullable_str("n").unwrap(), None);
    assert_eq!(r.compact_str("c").unwrap(), "c");
    assert_eq!(r.compact_nullable("cn").unwrap(), None);
    assert_eq!(r.uvarint("v").unwrap(), 300);
    assert_eq!(r.finish("all"), Ok(()));
}

#[test]
fn flexible_switches_only_the_flexible_dependent_reads() {
    let mut r = Reader::new(&[2, b'x', 1, 5, 1, 9]);
    r.flexible = true;
    assert_eq!(r.str("s").unwrap(), "x");
    // One tag: tag 5, one byte.
    let mut seen = Vec::new();
    r.tags(|tag, bytes| {
        seen.push((tag, bytes.to_vec()));
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, [(5, vec![9])]);
    // Non-flexible: no tag section to skip.
    let mut r = Reader::new(&[7]);
    r.skip_tags_if_flexible().unwrap();
    assert_eq!(r.remaining(), 1);
    assert_eq!(r.finish("value"), Err(CodecError::Invalid("value")));
}

#[test]
fn reads_past_the_end_and_hostile_lengths_are_errors() {
    let mut r = Reader::new(&[0, 1]);
    assert_eq!(r.i32("x"), Err(CodecError::Truncated("x")));
    let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x7f]);
    assert_eq!(r.array_len(1, "arr"), Err(CodecError::Truncated("arr")));
    let mut r = Reader::new(&[0x80, 0x80, 0x80, 0x80, 0x80, 0]);
    assert_eq!(r.uvarint("v"), Err(CodecError::Invalid("v")));
    let mut r = Reader::new(&[0xff, 0xfe]);
    assert_eq!(r.str("s"), Err(CodecError::Invalid("s")));
}

#[test]
fn errors_name_their_topic_when_asked() {
    let e = CodecError::Truncated("group");
    assert_eq!(
        e.in_topic("__consumer_offsets").to_string(),
        "__consumer_offsets record truncated while reading group"
    );
    assert_eq!(
        CodecError::UnknownVersion(9)
            .in_topic("__share_group_state")
            .to_string(),
        "__share_group_state value version 9 is not one Kafka defines"
    );
}
