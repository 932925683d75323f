// Scenario compaction: a compacted topic with a fast cleaning profile (segment.ms=100,
// min.cleanable.dirty.ratio=0.01, delete.retention.ms=100); after cleaning, a consumer
// reading from 0 gets each key's latest value at its original offset and tombstoned keys
// are gone. Segments roll on append once segment.ms has passed, so the test keeps appending
// a "~roll" record while it waits (bounded by the scenario deadline).
package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const rollKey = "~roll"

func runCompaction(ctx context.Context, e *env) (string, error) {
	adm, acl, err := newAdmin(e)
	if err != nil {
		return "", err
	}
	defer acl.Close()
	topic := e.name("compact")
	err = createTopic(ctx, adm, topic, 1, map[string]*string{
		"cleanup.policy":            strp("compact"),
		"segment.ms":                strp("100"),
		"min.cleanable.dirty.ratio": strp("0.01"),
		"delete.retention.ms":       strp("100"),
		"file.delete.delay.ms":      strp("0"),
		"segment.bytes":             strp("1048576"),
	})
	if err != nil {
		return "", err
	}
	p, err := newClient(e, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	if err != nil {
		return "", err
	}
	defer p.Close()

	// A keyless record on a compacted topic is refused with INVALID_RECORD. kgo's idempotent
	// producer would then fail the whole producer ID sequence, so use a non-idempotent one.
	np, err := newClient(e, kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	if err != nil {
		return "", err
	}
	defer np.Close()
	res := np.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")})
	if err := res.FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		return "", fmt.Errorf("keyless record on a compacted topic: got %v, want INVALID_RECORD", err)
	}

	// 10 keys x 5 values, then tombstones for k0 and k1.
	latest := map[string]struct {
		value  string
		offset int64
	}{}
	for j := 0; j < 5; j++ {
		for i := 0; i < 10; i++ {
			k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("%d:%d", i, j)
			recs, err := produceSync(ctx, p, &kgo.Record{Key: []byte(k), Value: []byte(v)})
			if err != nil {
				return "", err
			}
			latest[k] = struct {
				value  string
				offset int64
			}{v, recs[0].Offset}
		}
	}
	if _, err := produceSync(ctx, p, &kgo.Record{Key: []byte("k0")}, &kgo.Record{Key: []byte("k1")}); err != nil {
		return "", err
	}
	delete(latest, "k0")
	delete(latest, "k1")
	if latest["k9"].offset != 49 {
		return "", fmt.Errorf("k9's last value at offset %d, want 49", latest["k9"].offset)
	}

	var last string
	rolls := 0
	for {
		time.Sleep(150 * time.Millisecond)
		if _, err := produceSync(ctx, p, &kgo.Record{Key: []byte(rollKey), Value: []byte("r")}); err != nil {
			return "", fmt.Errorf("roll record: %w", err)
		}
		rolls++
		recs, err := readAll(ctx, e, adm, topic)
		if err != nil {
			return "", err
		}
		problem := checkCompacted(recs, latest)
		if problem == "" {
			return fmt.Sprintf("keyless -> INVALID_RECORD; 50 writes over 10 keys + 2 tombstones -> 8 latest values at original offsets, tombstones gone (after %d roll appends)", rolls), nil
		}
		last = problem
		if ctx.Err() != nil || deadlineNear(ctx, 3*time.Second) {
			return "", fmt.Errorf("not compacted before the deadline: %s", last)
		}
	}
}

func deadlineNear(ctx context.Context, margin time.Duration) bool {
	d, ok := ctx.Deadline()
	return ok && time.Until(d) < margin
}

// checkCompacted returns "" when recs hold exactly the latest value of each live key at its
// original offset, nothing for tombstoned keys, and each key at most once.
func checkCompacted(recs []*kgo.Record, latest map[string]struct {
	value  string
	offset int64
}) string {
	seen := map[string]int{}
	var problems []string
	for _, r := range recs {
		k := string(r.Key)
		if k == rollKey {
			continue
		}
		seen[k]++
		want, live := latest[k]
		switch {
		case !live:
			problems = append(problems, fmt.Sprintf("%s@%d still present (value nil=%v)", k, r.Offset, r.Value == nil))
		case string(r.Value) != want.value || r.Offset != want.offset:
			problems = append(problems, fmt.Sprintf("%s@%d=%s (want %s@%d)", k, r.Offset, r.Value, want.value, want.offset))
		}
	}
	for k := range latest {
		if seen[k] == 0 {
			problems = append(problems, k+" missing")
		}
	}
	if len(problems) > 6 {
		problems = append(problems[:6], fmt.Sprintf("... %d more", len(problems)-6))
	}
	return strings.Join(problems, ", ")
}

// readAll reads partition 0 from its log start to the current high watermark.
func readAll(ctx context.Context, e *env, adm *kadm.Client, topic string) ([]*kgo.Record, error) {
	lo, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("ListEndOffsets: %w", err)
	}
	end, ok := lo.Lookup(topic, 0)
	if !ok || end.Err != nil {
		return nil, fmt.Errorf("ListEndOffsets %s: present=%v err=%v", topic, ok, end.Err)
	}
	c, err := newClient(e, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for {
		if len(out) > 0 && out[len(out)-1].Offset >= end.Offset-1 {
			return out, nil
		}
		fs := c.PollFetches(rctx)
		if rctx.Err() != nil {
			return nil, fmt.Errorf("reading %s up to %d: got to %d records: %w", topic, end.Offset, len(out), rctx.Err())
		}
		if err := fs.Err(); err != nil {
			return nil, fmt.Errorf("fetch %s: %w", topic, err)
		}
		out = append(out, fs.Records()...)
	}
}
