// Scenarios produce_consume and compression: keyed records with headers through the
// idempotent kgo producer (kgo's default), read back in order with keys, headers, null
// values and timestamps intact; one round trip per codec with the batch's codec checked on
// the consumer side.
package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func runProduceConsume(ctx context.Context, e *env) (string, error) {
	adm, acl, err := newAdmin(e)
	if err != nil {
		return "", err
	}
	defer acl.Close()
	topic := e.name("pc")
	if err := createTopic(ctx, adm, topic, 3, nil); err != nil {
		return "", err
	}

	// Keyed records: the default partitioner hashes keys, so each key stays on one partition.
	p, err := newClient(e, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return "", err
	}
	defer p.Close()
	const n = 300
	ts := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	var sent []*kgo.Record
	for i := 0; i < n; i++ {
		r := &kgo.Record{
			Key:       []byte(fmt.Sprintf("key-%d", i%17)),
			Value:     []byte(fmt.Sprintf("value-%d", i)),
			Timestamp: ts.Add(time.Duration(i) * time.Millisecond),
			Headers: []kgo.RecordHeader{
				{Key: "seq", Value: []byte(fmt.Sprint(i))},
				{Key: "empty", Value: nil},
				{Key: "seq", Value: []byte("dup")}, // repeated header keys keep their order
			},
		}
		if i == n-1 {
			r.Value = nil // a null value
		}
		sent = append(sent, r)
	}
	// Produce asynchronously so batches hold many records, then wait for every ack.
	errs := make(chan error, n)
	for _, r := range sent {
		p.Produce(ctx, r, func(_ *kgo.Record, err error) { errs <- err })
	}
	if err := p.Flush(ctx); err != nil {
		return "", fmt.Errorf("flush: %w", err)
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			return "", fmt.Errorf("produce: %w", err)
		}
	}
	next := map[int32]int64{}
	for _, r := range sent {
		if r.Offset != next[r.Partition] {
			return "", fmt.Errorf("record %s acked at %d/%d, want offset %d", r.Value, r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition]++
	}

	c, err := newClient(e, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return "", err
	}
	defer c.Close()
	got, err := consumeN(ctx, c, n)
	if err != nil {
		return "", err
	}
	if len(got) != n {
		return "", fmt.Errorf("consumed %d records, want %d", len(got), n)
	}
	byPart := map[int32][]*kgo.Record{}
	for _, r := range got {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	sentByPart := map[int32][]*kgo.Record{}
	for _, r := range sent {
		sentByPart[r.Partition] = append(sentByPart[r.Partition], r)
	}
	for part, want := range sentByPart {
		have := byPart[part]
		if len(have) != len(want) {
			return "", fmt.Errorf("partition %d: consumed %d, produced %d", part, len(have), len(want))
		}
		for i := range want {
			if err := sameRecord(want[i], have[i]); err != nil {
				return "", fmt.Errorf("partition %d index %d: %w", part, i, err)
			}
		}
	}
	if extra, _ := drain(ctx, c, 500*time.Millisecond); len(extra) > 0 {
		return "", fmt.Errorf("%d unexpected extra records after the %d produced", len(extra), n)
	}
	return fmt.Sprintf("%d keyed records with 3 headers each (repeated key, null header), null value, explicit timestamps over 3 partitions (idempotent producer) read back in order at offsets 0..", n), nil
}

func sameRecord(want, have *kgo.Record) error {
	if have.Offset != want.Offset {
		return fmt.Errorf("offset %d, want %d", have.Offset, want.Offset)
	}
	if !bytes.Equal(have.Key, want.Key) {
		return fmt.Errorf("key %q, want %q", have.Key, want.Key)
	}
	if !bytes.Equal(have.Value, want.Value) || (have.Value == nil) != (want.Value == nil) {
		return fmt.Errorf("value %q (nil=%v), want %q (nil=%v)", have.Value, have.Value == nil, want.Value, want.Value == nil)
	}
	if !have.Timestamp.Equal(want.Timestamp) {
		return fmt.Errorf("timestamp %v, want %v", have.Timestamp, want.Timestamp)
	}
	if len(have.Headers) != len(want.Headers) {
		return fmt.Errorf("%d headers, want %d", len(have.Headers), len(want.Headers))
	}
	for i := range want.Headers {
		if have.Headers[i].Key != want.Headers[i].Key || !bytes.Equal(have.Headers[i].Value, want.Headers[i].Value) {
			return fmt.Errorf("header %d %s=%q, want %s=%q", i, have.Headers[i].Key, have.Headers[i].Value, want.Headers[i].Key, want.Headers[i].Value)
		}
	}
	return nil
}

// codecs lists what kgo supports, with the attribute value Kafka stores for each.
var codecs = []struct {
	name  string
	codec kgo.CompressionCodec
	attr  uint8
}{
	{"none", kgo.NoCompression(), 0},
	{"gzip", kgo.GzipCompression(), 1},
	{"snappy", kgo.SnappyCompression(), 2},
	{"lz4", kgo.Lz4Compression(), 3},
	{"zstd", kgo.ZstdCompression(), 4},
}

func runCompression(ctx context.Context, e *env) (string, error) {
	adm, acl, err := newAdmin(e)
	if err != nil {
		return "", err
	}
	defer acl.Close()
	var done []string
	for _, cc := range codecs {
		topic := e.name("codec-" + cc.name)
		if err := createTopic(ctx, adm, topic, 1, nil); err != nil {
			return "", err
		}
		if err := codecRoundTrip(ctx, e, topic, cc.codec, cc.attr); err != nil {
			return "", fmt.Errorf("%s: %w (passed: %s)", cc.name, err, strings.Join(done, ","))
		}
		done = append(done, cc.name)
	}
	return "round trip of 200 compressible records, batch codec attribute checked: " + strings.Join(done, ", "), nil
}

func codecRoundTrip(ctx context.Context, e *env, topic string, codec kgo.CompressionCodec, attr uint8) error {
	p, err := newClient(e, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(20*time.Millisecond))
	if err != nil {
		return err
	}
	defer p.Close()
	const n = 200
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		v := []byte(fmt.Sprintf("%05d:%s", i, strings.Repeat("compressible ", 20)))
		p.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: v}, func(_ *kgo.Record, err error) { errs <- err })
	}
	if err := p.Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			return fmt.Errorf("produce: %w", err)
		}
	}
	c, err := newClient(e, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer c.Close()
	got, err := consumeN(ctx, c, n)
	if err != nil {
		return err
	}
	if len(got) != n {
		return fmt.Errorf("consumed %d, want %d", len(got), n)
	}
	for i, r := range got {
		want := fmt.Sprintf("%05d:%s", i, strings.Repeat("compressible ", 20))
		if r.Offset != int64(i) || string(r.Value) != want || string(r.Key) != fmt.Sprint(i) {
			return fmt.Errorf("record %d: offset %d key %q value %.20q", i, r.Offset, r.Key, r.Value)
		}
		if r.Attrs.CompressionType() != attr {
			return fmt.Errorf("record %d came in a batch with codec %d, want %d", i, r.Attrs.CompressionType(), attr)
		}
	}
	return nil
}
