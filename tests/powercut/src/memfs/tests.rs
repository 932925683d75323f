//! Unit tests of the labels and of the durable image.

use super::step::classify;
use super::*;

#[test]
fn labels_follow_kafka_file_names() {
    assert_eq!(classify("mkdir", "", "t-0", ""), Step::TopicCreate);
    assert_eq!(
        classify("rename", "", "t-0", "t-0.abc-delete"),
        Step::TopicDelete
    );
    assert_eq!(
        classify(
            "rename",
            "t-0",
            "00000000000000000000.log.cleaned",
            "x.log.swap"
        ),
        Step::CleanerSwap
    );
    assert_eq!(
        classify("create", "t-0", "00000000000000000100.log", ""),
        Step::SegmentRoll
    );
    assert_eq!(
        classify(
            "write",
            "__consumer_offsets-3",
            "00000000000000000000.log",
            ""
        ),
        Step::OffsetCommit
    );
    assert_eq!(
        classify(
            "rename",
            "",
            "recovery-point-offset-checkpoint.tmp",
            "recovery-point-offset-checkpoint"
        ),
        Step::Checkpoint
    );
}

#[test]
fn image_keeps_only_what_was_synced() {
    let (_fs, h) = MemFs::from_image(Image::empty(), Broken::No);
    {
        let mut st = lock(&h.shared);
        let f = st.new_inode(
            Node::File {
                data: b"abc".to_vec(),
                durable: Arc::new(b"a".to_vec()),
            },
            0o644,
        );
        let g = st.new_inode(
            Node::File {
                data: b"zzz".to_vec(),
                durable: Arc::new(Vec::new()),
            },
            0o644,
        );
        if let Some(Inode {
            node: Node::Dir {
                entries, durable, ..
            },
            ..
        }) = st.inodes.get_mut(&ROOT)
        {
            entries.insert("f".into(), f);
            entries.insert("g".into(), g);
            durable.insert("f".into(), f);
        }
    }
    let (img, info) = h.cut();
    assert!(info.step.is_none());
    assert_eq!(img.list(), vec!["/f (1 B)".to_string()]);
}
